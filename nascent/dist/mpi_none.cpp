// The MPI communicator of a build without MPI (CMake found none, or
// -DNASCENT_MPI=OFF): asking for it says how to get it.
#include "nascent/dist/mpi.h"

namespace nascent::dist {

bool has_mpi() {
  return false;
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  throw BackendError(
      "dist: this build has no MPI communicator; install Open MPI "
      "(apt-get install libopenmpi-dev openmpi-bin) and configure again");
}

}  // namespace nascent::dist
