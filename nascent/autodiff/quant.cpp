// The quant family through the tape: quantized weights are constants and
// the products are not differentiable (op_table.h), so the ops are
// forwarded unrecorded; a product whose x carries history is refused
// rather than silently cutting the gradient off.
#include <fmt/format.h>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

void Backend::quant(QuantOp op, const Tensor* x,
                    std::span<const QuantArg> args) {
  if (op == QuantOp::qmatmul && x != nullptr) {
    const detail::Recording r = detail::record({x}, DType::f32);
    if (r.active && r.any(0)) {
      throw ValueError(fmt::format(
          "qmatmul: x {} requires grad, but products with quantized weights "
          "are not differentiable; use matmul with float weights, or compute "
          "under NoGradGuard",
          x->to_string()));
    }
  }
  ForwardingBackend::quant(op, x, args);
}

}  // namespace nascent::autodiff
