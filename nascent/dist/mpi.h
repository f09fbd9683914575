// Collectives over MPI (Open MPI here: Debian's libopenmpi-dev), for CPU
// processes on one machine or several (`mpirun -np 2 nascent train
// --distributed mpi`). Tensors of any backend go through host memory:
// f16 and bf16 add up in f32, so a sum is as exact as f32's. Every
// collective is non-blocking underneath and polled, so a rank that stops
// answering ends in dist::TimeoutError after timeout(), never a hang.
//
// Built when CMake finds MPI (-DNASCENT_MPI=AUTO|ON|OFF); has_mpi() says.
#pragma once

#include <memory>

#include "nascent/dist/communicator.h"

namespace nascent::dist {

// Whether this build has the MPI communicator.
bool has_mpi();

// Initialises MPI the first time (MPI_Init_thread; finalised at exit) and
// joins MPI_COMM_WORLD. BackendError when this build has no MPI.
std::unique_ptr<Communicator> make_mpi_communicator();

}  // namespace nascent::dist
