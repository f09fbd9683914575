// swiglu and geglu, y = act(gate) * up: d gate = g up act'(gate) (act' as
// the unary rules have it) and d up = g act(gate), recomputed from the
// saved gate rather than kept from the forward.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

UnaryOp activation_of(GluOp op) {
  return op == GluOp::swiglu ? UnaryOp::silu : UnaryOp::gelu_tanh;
}

class GluNode final : public detail::Node {
 public:
  GluNode(GluOp op, std::vector<Edge> next, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out), op_(op) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor gate = gate_.get(*this);
    std::vector<Tensor> out(2);
    if (needs(0)) {
      const Tensor d = detail::activation_derivative(activation_of(op_), gate);
      out[0] = mul(mul(g, up_.get(*this)), d);
    }
    if (needs(1)) {
      out[1] = mul(g, op_ == GluOp::swiglu ? silu(gate) : gelu_tanh(gate));
    }
    return out;
  }
  void release() override {
    released_ = released_ || gate_.defined() || up_.defined();
    gate_.reset();
    up_.reset();
  }

  Saved gate_, up_;

 private:
  GluOp op_;
};

}  // namespace

void Backend::glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out) {
  detail::Recording r = detail::record({&gate, &up}, out.dtype());
  std::shared_ptr<GluNode> node;
  if (r.active) {
    node = std::make_shared<GluNode>(op, r.edges, out);
    node->gate_ = Saved::input(gate, r.edges[0]);
    if (r.any(0)) node->up_ = Saved::input(up, r.edges[1]);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.glu(op, detail::to_inner(gate), detail::to_inner(up), o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
