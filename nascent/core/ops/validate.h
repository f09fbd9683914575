// Checks shared by the op front-ends. Private to core/ops.
#pragma once

#include <initializer_list>
#include <string>

#include <fmt/format.h>

#include "nascent/core/tensor.h"

namespace nascent::detail {

// The backend all of `tensors` live on; BackendError naming `op` if they
// are undefined or on different backends.
Backend& common_backend(const char* op,
                        std::initializer_list<const Tensor*> tensors);

// "f32[2, 3] and i64[3]" for error messages.
std::string describe(std::initializer_list<const Tensor*> tensors);

// DTypeError unless `ok`.
void check_dtype(bool ok, const char* op, const Tensor& t,
                 const char* expected);

// A new contiguous output of `shape` and `dtype` on `backend`.
inline Tensor new_output(const Shape& shape, DType dtype, Backend& backend) {
  return Tensor::empty(shape, dtype, backend);
}

// ValueError naming `op` for the first value of idx (an i64 view of the
// caller's `index`) outside [0, size) on axis `axis` of x (ops/index.cpp).
void check_index_range(const char* op, const Tensor& idx, const Tensor& index,
                       int64_t size, int axis, const Tensor& x);

// A 0-d tensor holding `value` in `dtype`.
Tensor scalar_tensor(Scalar value, DType dtype, Backend& backend);

}  // namespace nascent::detail
