#include "nascent/core/ops/validate.h"

#include <vector>

#include <fmt/ranges.h>

namespace nascent::detail {

std::string describe(std::initializer_list<const Tensor*> tensors) {
  std::vector<std::string> parts;
  for (const Tensor* t : tensors) {
    if (t != nullptr) parts.push_back(t->to_string());
  }
  return fmt::format("{}", fmt::join(parts, " and "));
}

Backend& common_backend(const char* op,
                        std::initializer_list<const Tensor*> tensors) {
  Backend* backend = nullptr;
  for (const Tensor* t : tensors) {
    if (t == nullptr) continue;
    if (!t->defined()) {
      throw ValueError(fmt::format("{}: an input tensor is undefined", op));
    }
    if (backend == nullptr) {
      backend = &t->backend();
    } else if (backend != &t->backend()) {
      throw BackendError(fmt::format(
          "{}: tensors live on different backends ({} and {}): {}; move "
          "them with to()",
          op, backend->name(), t->backend().name(), describe(tensors)));
    }
  }
  if (backend == nullptr) {
    throw ValueError(fmt::format("{}: no input tensor given", op));
  }
  return *backend;
}

void check_dtype(bool ok, const char* op, const Tensor& t,
                 const char* expected) {
  if (!ok) {
    throw DTypeError(
        fmt::format("{}: expected {}, got {}", op, expected, t.to_string()));
  }
}

Tensor scalar_tensor(Scalar value, DType dtype, Backend& backend) {
  Tensor t = Tensor::empty({}, dtype, backend);
  backend.create(CreationOp::fill, value, Scalar(0), t);
  return t;
}

}  // namespace nascent::detail
