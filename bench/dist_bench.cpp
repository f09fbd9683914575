// all_reduce of f32 tensors through nascent's MPI communicator against the
// MPI library's own MPI_Allreduce on a host buffer, in the same run:
//
//   mpirun -np 2 build/bench/bench/dist_bench [--reps N]
//
// Prints, on rank 0, the time per call and the bus bandwidth (nccl-tests'
// definition: 2 (n - 1) / n * bytes / time) of both, and nascent's time
// over MPI's: what the tensor round trip (host copy, conversion, upload)
// and the polled wait cost on top of the transfer.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/dist/mpi.h"

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  // The slowest rank's best is the collective's time.
  double all = 0.0;
  MPI_Allreduce(&best, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nascent;
  int reps = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--reps")
      reps = std::max(1, std::atoi(argv[i + 1]));
  }
  std::unique_ptr<dist::Communicator> comm = dist::make_mpi_communicator();
  cpu::Backend cpu;
  const int world = comm->world_size();
  if (comm->rank() == 0) {
    std::printf("all_reduce (sum) of f32 over %d ranks, best of %d\n", world,
                reps);
    std::printf("%12s %12s %12s %10s %10s %8s\n", "elements", "MPI us",
                "nascent us", "MPI GB/s", "nascent", "ratio");
  }
  // 535 818 is the Fashion-MNIST MLP's gradient, one bucket.
  for (int64_t n : {int64_t(1024), int64_t(65536), int64_t(535818),
                    int64_t(4) << 20, int64_t(16) << 20}) {
    std::vector<float> host(size_t(n), 1.0f);
    const double mpi = best_seconds(reps, [&] {
      MPI_Allreduce(MPI_IN_PLACE, host.data(), int(n), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    });
    Tensor x = ones({n}, cpu);
    Tensor y;
    const double ours = best_seconds(reps, [&] { y = comm->all_reduce(x); });
    if (y.to_vector<float>()[0] != float(world)) {
      std::fprintf(stderr, "wrong sum\n");
      return 1;
    }
    const double bus = 2.0 * (world - 1) / world * double(n) * 4.0;
    if (comm->rank() == 0) {
      std::printf("%12lld %12.1f %12.1f %10.2f %10.2f %8.2f\n",
                  static_cast<long long>(n), mpi * 1e6, ours * 1e6,
                  bus / mpi * 1e-9, bus / ours * 1e-9, mpi / ours);
    }
  }
  return 0;
}
