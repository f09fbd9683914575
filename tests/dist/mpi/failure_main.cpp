// A run in which one rank fails, for tests/dist/mpi/failure_test.sh:
//   die      rank 1 exits at once; rank 0 waits in an all_reduce, and must
//            be ended by the launcher, not hang
//   timeout  rank 1 stays alive but never joins; rank 0's all_reduce must
//            raise TimeoutError after NASCENT_DIST_TIMEOUT, and its abort()
//            must end rank 1 too
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <unistd.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/dist/mpi.h"

int main(int argc, char** argv) {
  using namespace nascent;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "die" && mode != "timeout") {
    std::fprintf(stderr, "usage: dist_failure die|timeout\n");
    return 2;
  }
  std::unique_ptr<dist::Communicator> comm = dist::make_mpi_communicator();
  cpu::Backend cpu;
  comm->barrier();  // Both ranks are up.
  if (comm->rank() == 1) {
    if (mode == "die") _exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  try {
    comm->all_reduce(ones({1000}, cpu));
    std::fprintf(stderr, "all_reduce returned without rank 1\n");
    return 0;
  } catch (const dist::TimeoutError& e) {
    std::fprintf(stderr, "rank 0: %s\n", e.what());
    comm->abort(4);
  }
}
