// swiglu and geglu: validation, and the default Backend::glu composed from
// the activation and a product.
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

Tensor glu(GluOp op, const Tensor& gate, const Tensor& up) {
  const char* op_name = name(op);
  Backend& backend = detail::common_backend(op_name, {&gate, &up});
  if (gate.shape() != up.shape()) {
    throw ShapeError(fmt::format("{}: gate and up differ in shape ({})",
                                 op_name, detail::describe({&gate, &up})));
  }
  const DType dt = to_floating(promote_types(gate.dtype(), up.dtype()));
  if (gate.dtype() == DType::boolean || up.dtype() == DType::boolean) {
    throw DTypeError(fmt::format("{}: needs numbers, got {}", op_name,
                                 detail::describe({&gate, &up})));
  }
  Tensor out = detail::new_output(gate.shape(), dt, backend);
  if (out.numel() == 0) return out;
  backend.glu(op, gate.cast(dt), up.cast(dt), out);
  return out;
}

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  return glu(GluOp::swiglu, gate, up);
}

Tensor geglu(const Tensor& gate, const Tensor& up) {
  return glu(GluOp::geglu, gate, up);
}

void Backend::glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out) {
  const Tensor act = op == GluOp::swiglu ? silu(gate) : gelu_tanh(gate);
  assign(out, mul(act, up));
}

}  // namespace nascent
