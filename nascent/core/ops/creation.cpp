#include <cmath>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

Tensor full(const Shape& shape, Scalar value, Backend& backend, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype, backend);
  backend.create(CreationOp::fill, value, Scalar(0), out);
  return out;
}

Tensor zeros(const Shape& shape, Backend& backend, DType dtype) {
  return full(shape, 0, backend, dtype);
}

Tensor ones(const Shape& shape, Backend& backend, DType dtype) {
  return full(shape, 1, backend, dtype);
}

Tensor full_like(const Tensor& t, Scalar value) {
  return full(t.shape(), value, t.backend(), t.dtype());
}
Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0);
}
Tensor ones_like(const Tensor& t) {
  return full_like(t, 1);
}

Tensor arange(Scalar start, Scalar stop, Scalar step, Backend& backend,
              DType dtype) {
  double a = start.to_double(), b = stop.to_double(), s = step.to_double();
  if (s == 0.0 || !std::isfinite(a) || !std::isfinite(b) || !std::isfinite(s)) {
    throw ValueError(fmt::format(
        "arange: need finite bounds and a non-zero step, got start {} stop "
        "{} step {}",
        a, b, s));
  }
  double count = std::ceil((b - a) / s);
  if (count > 9.0e15) {
    throw ValueError(fmt::format("arange: {} elements is too many", count));
  }
  int64_t n = count > 0 ? int64_t(count) : 0;
  if (start.is_integral() && stop.is_integral() && step.is_integral()) {
    // Exact integer count: ceil((stop - start) / step) without rounding.
    int64_t d = stop.to_int64() - start.to_int64(), st = step.to_int64();
    n = st > 0 ? (d > 0 ? (d + st - 1) / st : 0)
               : (d < 0 ? (-d + -st - 1) / -st : 0);
  }
  Tensor out = Tensor::empty({n}, dtype, backend);
  backend.create(CreationOp::arange, start, step, out);
  return out;
}

Tensor arange(int64_t stop, Backend& backend, DType dtype) {
  return arange(int64_t(0), stop, int64_t(1), backend, dtype);
}

Tensor from_data(const void* data, const Shape& shape, DType dtype,
                 Backend& backend) {
  int64_t n = checked_numel(shape, "from_data");
  auto storage = backend.upload(data, size_t(n) * size_of(dtype));
  return Tensor::make(shape, contiguous_strides(shape), 0, dtype, backend,
                      std::move(storage));
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  Shape target = broadcast_shapes(x.shape(), shape, "broadcast_to");
  if (target != shape) {
    throw ShapeError(fmt::format("broadcast_to: cannot broadcast {} to {}",
                                 x.to_string(), to_string(shape)));
  }
  return x.expand(shape);
}

}  // namespace nascent
