// Collective communication between the processes of a data-parallel run
// (PyTorch's torch.distributed process group, MLX's distributed group):
// every process, a rank of 0..world_size-1, calls the same collectives in
// the same order with tensors of the same shape and dtype.
//
//   std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi",
//   cpu); Tensor g = comm->all_reduce(grad, dist::Reduction::mean);
//
// Implementations: "local" (one process, below), "mpi" (dist/mpi.h: host
// memory, so tensors of any backend) and "nccl" (the CUDA backend's, on
// the GPU's stream). A collective that waits longer than timeout() for the
// other ranks throws dist::TimeoutError instead of hanging; after one, the
// communicator is broken and abort() is the way out.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "nascent/core/error.h"
#include "nascent/core/tensor.h"

namespace nascent::dist {

enum class Reduction { sum, mean };

// A collective that waited past the timeout, or a rank that went away.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A collective started without waiting (all_reduce_async): wait() gives its
// result; test() reports whether it is done, moving the transfer on (MPI
// progresses only inside its calls).
class Work {
 public:
  virtual ~Work() = default;
  virtual bool test() = 0;
  virtual Tensor wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "local", "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // The element-wise sum (or mean) of every rank's x, on x's backend in
  // x's dtype. f32, f16, bf16 and i32; f16 and bf16 add up in f32.
  Tensor all_reduce(const Tensor& x, Reduction op = Reduction::sum);
  virtual std::unique_ptr<Work> all_reduce_async(const Tensor& x,
                                                 Reduction op) = 0;
  // Rank `root`'s x on every rank; the others pass a tensor of the same
  // shape and dtype (its values are not read). Any dtype.
  virtual Tensor broadcast(const Tensor& x, int root = 0) = 0;
  // Every rank's x stacked on a new first axis: [world_size, ...x.shape].
  virtual Tensor all_gather(const Tensor& x) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the run at once with `code` (MPI_Abort): the way
  // out after an error on one rank, which would leave the others waiting.
  [[noreturn]] virtual void abort(int code) = 0;

  // How long a collective waits for the other ranks: NASCENT_DIST_TIMEOUT
  // seconds, default 300 (PyTorch's is 600 for NCCL, 1800 for Gloo).
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 protected:
  Communicator();
  // ValueError naming `op` unless x is defined and, for a reduction, of a
  // dtype it adds up; and unless `root` is a rank.
  void check(const char* op, const Tensor& x, bool reduces, int root = 0) const;
  // check("all_reduce", ...), and DTypeError for a mean of integers.
  void check_reduce(const Tensor& x, Reduction op) const;

 private:
  std::chrono::milliseconds timeout_;
};

// One process: every collective returns its input (mean of one = itself).
// Lets the same training code run with and without a launcher.
class LocalCommunicator final : public Communicator {
 public:
  std::string name() const override { return "local"; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::unique_ptr<Work> all_reduce_async(const Tensor& x,
                                         Reduction op) override;
  Tensor broadcast(const Tensor& x, int root = 0) override;
  Tensor all_gather(const Tensor& x) override;
  void barrier() override {}
  [[noreturn]] void abort(int code) override;
};

// A finished collective (local, and stream-ordered ones like NCCL's).
class DoneWork final : public Work {
 public:
  explicit DoneWork(Tensor result) : result_(std::move(result)) {}
  bool test() override { return true; }
  Tensor wait() override { return result_; }

 private:
  Tensor result_;
};

}  // namespace nascent::dist
