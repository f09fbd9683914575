// Where this process stands in a multi-process run, from the variables its
// launcher set: nascent's own launcher (`nascent train --nproc N`) sets
// NASCENT_RANK, NASCENT_WORLD_SIZE and NASCENT_LOCAL_RANK; torchrun-style
// launchers set RANK, WORLD_SIZE and LOCAL_RANK; Open MPI's mpirun sets
// OMPI_COMM_WORLD_RANK, _SIZE and _LOCAL_RANK. The first complete set wins.
#pragma once

#include <chrono>
#include <string>

namespace nascent::dist {

struct Placement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // Among the ranks of this host: picks the GPU.
  int local_size = 1;  // Ranks on this host: shares out the CPU cores.
  std::string source;  // The launcher's variables it came from, or "".
};

// ValueError naming the variable when one is set but is not a number in
// range (a rank at or past the world size, a size below 1).
Placement placement_from_environment();

// NASCENT_DIST_TIMEOUT (seconds, > 0), else 300 s; ValueError if malformed.
std::chrono::milliseconds timeout_from_environment();

}  // namespace nascent::dist
