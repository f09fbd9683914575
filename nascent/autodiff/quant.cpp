// The quant family through the tape: quantized weights are constants and
// the products are not differentiable (op_table.h), so nothing is recorded;
// a product whose x carries history is refused rather than silently
// cutting the gradient off.
#include <vector>

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
  std::vector<Tensor> ws, outs;
  std::vector<QuantArg> in_args;
  ws.reserve(args.size());
  outs.reserve(args.size());
  for (const QuantArg& a : args) {
    detail::begin_write(*a.out, false);
    ws.push_back(a.w != nullptr ? detail::to_inner(*a.w) : Tensor());
    outs.push_back(detail::to_inner(*a.out));
    in_args.push_back(
        {a.type, a.w != nullptr ? &ws.back() : nullptr, &outs.back()});
  }
  const Tensor xi = x != nullptr ? detail::to_inner(*x) : Tensor();
  inner_.quant(op, x != nullptr ? &xi : nullptr, in_args);
  for (const QuantArg& a : args) detail::end_write(*a.out, nullptr);
}

}  // namespace nascent::autodiff
