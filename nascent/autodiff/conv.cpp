// conv2d and its two gradient convolutions. All three are bilinear in their
// operands, and each one's gradients are the other two:
//   y = conv2d(x, w):                 dx = bwd_input(g, w), dw = bwd_weight(x,
//   g) y = bwd_input(go, w) [input]:     dgo = conv2d(g, w),  dw =
//   bwd_weight(g, go) y = bwd_weight(x, go) [weight]:   dx = bwd_input(go, g),
//   dgo = conv2d(x, g)
// so gradients of gradients come for free.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class ConvNode final : public detail::Node {
 public:
  ConvNode(ConvOp op, const Conv2dParams& p, std::vector<Edge> next,
           const Tensor& a, const Tensor& b, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out),
        op_(op),
        p_(p),
        a_shape_(a.shape()),
        b_shape_(b.shape()) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    std::vector<Tensor> out(3);
    const Tensor a = a_.defined() ? a_.get(*this) : Tensor();
    const Tensor b = b_.defined() ? b_.get(*this) : Tensor();
    switch (op_) {
      case ConvOp::conv2d:  // a = x, b = w
        if (needs(0)) out[0] = conv2d_backward_input(g, b, a_shape_, p_);
        if (needs(1)) out[1] = conv2d_backward_weight(a, g, b_shape_, p_);
        // Per image and channel first (contiguous rows, the backends' fast
        // case), then over the batch: one sum over {0, 2, 3} walks strided
        // runs.
        if (needs(2)) out[2] = sum(sum(g, {2, 3}), {0});
        break;
      case ConvOp::conv2d_backward_input:  // a = grad_out, b = w
        if (needs(0)) out[0] = conv2d(g, b, nullptr, p_);
        if (needs(1)) out[1] = conv2d_backward_weight(g, a, b_shape_, p_);
        break;
      case ConvOp::conv2d_backward_weight:  // a = x, b = grad_out
        if (needs(0)) out[0] = conv2d_backward_input(b, g, a_shape_, p_);
        if (needs(1)) out[1] = conv2d(a, g, nullptr, p_);
        break;
    }
    return out;
  }
  void release() override {
    released_ = released_ || a_.defined() || b_.defined();
    a_.reset();
    b_.reset();
  }

  Saved a_, b_;

 private:
  ConvOp op_;
  Conv2dParams p_;
  Shape a_shape_, b_shape_;
};

}  // namespace

void Backend::conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                     const Tensor* bias, const Conv2dParams& p, Tensor& out) {
  detail::Recording r = detail::record({&a, &b, bias}, out.dtype());
  std::shared_ptr<ConvNode> node;
  if (r.active) {
    node = std::make_shared<ConvNode>(op, p, r.edges, a, b, out);
    // Each operand's gradient reads the other one (see the top).
    if (r.any(1)) node->a_ = Saved::input(a, r.edges[0]);
    if (r.any(0)) node->b_ = Saved::input(b, r.edges[1]);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  Tensor bias_inner = bias != nullptr ? detail::to_inner(*bias) : Tensor();
  inner_.conv2d(op, detail::to_inner(a), detail::to_inner(b),
                bias != nullptr ? &bias_inner : nullptr, p, o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
