#include "nascent/dist/communicator.h"

#include <cstdlib>

#include <fmt/format.h>

#include "nascent/core/ops.h"
#include "nascent/dist/environment.h"

namespace nascent::dist {

Communicator::Communicator() : timeout_(timeout_from_environment()) {}

Tensor Communicator::all_reduce(const Tensor& x, Reduction op) {
  return all_reduce_async(x, op)->wait();
}

void Communicator::check(const char* op, const Tensor& x, bool reduces,
                         int root) const {
  if (!x.defined()) {
    throw ValueError(
        fmt::format("{} ({}): the tensor is undefined", op, name()));
  }
  if (reduces && x.dtype() != DType::f32 && x.dtype() != DType::f16 &&
      x.dtype() != DType::bf16 && x.dtype() != DType::i32) {
    throw DTypeError(fmt::format(
        "{} ({}): cannot add up {} tensors ({}); f32, f16, bf16 or i32", op,
        name(), nascent::name(x.dtype()), x.to_string()));
  }
  if (root < 0 || root >= world_size()) {
    throw ValueError(fmt::format("{} ({}): root {} is not a rank of 0..{}", op,
                                 name(), root, world_size() - 1));
  }
}

void Communicator::check_reduce(const Tensor& x, Reduction op) const {
  check("all_reduce", x, true);
  if (op == Reduction::mean && x.dtype() == DType::i32) {
    throw DTypeError(fmt::format(
        "all_reduce ({}): a mean of {} is not an integer; reduce with sum",
        name(), x.to_string()));
  }
}

std::unique_ptr<Work> LocalCommunicator::all_reduce_async(const Tensor& x,
                                                          Reduction op) {
  check_reduce(x, op);
  return std::make_unique<DoneWork>(x.clone());
}

Tensor LocalCommunicator::broadcast(const Tensor& x, int root) {
  check("broadcast", x, false, root);
  return x.clone();
}

Tensor LocalCommunicator::all_gather(const Tensor& x) {
  check("all_gather", x, false);
  return x.unsqueeze(0).clone();
}

void LocalCommunicator::abort(int code) {
  std::exit(code);
}

}  // namespace nascent::dist
