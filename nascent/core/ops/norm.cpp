// layer_norm and rms_norm over the trailing normalized_ndim axes. Backends
// get x as a contiguous [rows, cols] and weight/bias as contiguous [cols] of
// x's dtype (integer x is taken as f32; weight and bias are cast to it).
#include <cmath>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

Tensor norm_op(NormOp op, const Tensor& x, const Tensor* weight,
               const Tensor* bias, double eps, int64_t normalized_ndim) {
  const char* op_name = name(op);
  Backend& backend = detail::common_backend(op_name, {&x, weight, bias});
  if (normalized_ndim < 1 || normalized_ndim > x.ndim()) {
    throw ValueError(
        fmt::format("{}: normalized_ndim must be in [1, {}] for x {}, got {}",
                    op_name, x.ndim(), x.to_string(), normalized_ndim));
  }
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    throw ValueError(
        fmt::format("{}: eps must be finite and >= 0, got {}", op_name, eps));
  }
  const size_t lead = size_t(x.ndim() - normalized_ndim);
  const Shape normalized(x.shape().begin() + std::ptrdiff_t(lead),
                         x.shape().end());
  int64_t rows = 1;
  for (size_t d = 0; d < lead; ++d) rows *= x.shape()[d];
  const int64_t cols = numel(normalized);
  const DType dtype = to_floating(x.dtype());
  auto param = [&](const Tensor* p, const char* what) -> Tensor {
    if (p == nullptr) return Tensor();
    if (p->shape() != normalized) {
      throw ShapeError(fmt::format(
          "{}: {} {} does not match the normalized shape {} of x {}", op_name,
          what, p->to_string(), to_string(normalized), x.to_string()));
    }
    return p->cast(dtype).contiguous().reshape({cols});
  };
  const Tensor w = param(weight, "weight");
  const Tensor b = param(bias, "bias");
  const Tensor in = x.cast(dtype).contiguous().reshape({rows, cols});
  Tensor out = detail::new_output({rows, cols}, dtype, backend);
  backend.norm(op, in, w.defined() ? &w : nullptr, b.defined() ? &b : nullptr,
               eps, out, nullptr, nullptr);
  return out.view(x.shape());
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor* weight, const Tensor* bias,
                  double eps, int64_t normalized_ndim) {
  return norm_op(NormOp::layer_norm, x, weight, bias, eps, normalized_ndim);
}

Tensor rms_norm(const Tensor& x, const Tensor* weight, double eps,
                int64_t normalized_ndim) {
  return norm_op(NormOp::rms_norm, x, weight, nullptr, eps, normalized_ndim);
}

}  // namespace nascent
