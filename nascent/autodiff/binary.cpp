// Element-wise binary ops and where. The front-ends hand both operands over
// as views of the output's shape (broadcast axes have stride 0), so each
// rule returns gradients of that shape; mapping them onto the operands'
// own shapes (summing broadcast axes) is the views' business.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class BinaryNode final : public detail::Node {
 public:
  BinaryNode(BinaryOp op, std::vector<Edge> next, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out), op_(op) {}

  std::vector<Tensor> apply(const Tensor& g) override;
  void release() override {
    released_ = released_ || a_.defined() || b_.defined() || y_.defined();
    a_.reset();
    b_.reset();
    y_.reset();
  }

  Saved a_, b_, y_;

 private:
  BinaryOp op_;
};

std::vector<Tensor> BinaryNode::apply(const Tensor& g) {
  const Tensor a = a_.defined() ? a_.get(*this) : Tensor();
  const Tensor b = b_.defined() ? b_.get(*this) : Tensor();
  std::vector<Tensor> out(2);
  switch (op_) {
    case BinaryOp::add:
      out = {g, g};
      break;
    case BinaryOp::sub:
      out[0] = g;
      if (needs(1)) out[1] = neg(g);
      break;
    case BinaryOp::mul:
      if (needs(0)) out[0] = mul(g, b);
      if (needs(1)) out[1] = mul(g, a);
      break;
    case BinaryOp::div:
      if (needs(0)) out[0] = div(g, b);
      if (needs(1)) out[1] = neg(div(mul(g, a), square(b)));
      break;
    case BinaryOp::pow:
      if (needs(0)) out[0] = mul(g, mul(b, pow(a, sub(b, 1.0))));
      if (needs(1)) {
        // a^b log a, taken as 0 at a = 0 (where a^b is 0 or 1), as PyTorch.
        const Tensor y = y_.get(*this);
        out[1] = where(ne(a, 0.0), mul(g, mul(y, log(a))), 0.0);
      }
      break;
    case BinaryOp::maximum:
    case BinaryOp::minimum: {
      // Ties split the gradient evenly between a and b, as PyTorch.
      Tensor wins = op_ == BinaryOp::maximum ? gt(a, b) : lt(a, b);
      Tensor share =
          add(wins.cast(g.dtype()), mul(eq(a, b).cast(g.dtype()), 0.5));
      if (needs(0)) out[0] = mul(g, share);
      if (needs(1)) out[1] = mul(g, 1.0 - share);
      break;
    }
    default:
      throw Error(std::string("autodiff: no gradient for ") +
                  nascent::name(op_));
  }
  return out;
}

// where(cond, a, b): the gradient goes to a where cond holds, else to b.
class WhereNode final : public detail::Node {
 public:
  WhereNode(std::vector<Edge> next, const Tensor& out)
      : Node("where", std::move(next), out) {}
  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor cond = cond_.get(*this);
    std::vector<Tensor> out(2);
    if (needs(0)) out[0] = where(cond, g, 0.0);
    if (needs(1)) out[1] = where(logical_not(cond), g, 0.0);
    return out;
  }
  void release() override {
    released_ = released_ || cond_.defined();
    cond_.reset();
  }
  Saved cond_;
};

}  // namespace

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                     Tensor& out) {
  detail::Recording r =
      detail::record({&a, &b}, out.dtype(), info(op_of(op)).differentiable);
  std::shared_ptr<BinaryNode> node;
  if (r.active) {
    node = std::make_shared<BinaryNode>(op, r.edges, out);
    // Save only what the rule reads for the inputs that need a gradient.
    bool want_a = false, want_b = false;
    switch (op) {
      case BinaryOp::mul:
        want_a = r.any(1);
        want_b = r.any(0);
        break;
      case BinaryOp::div:
        want_a = r.any(1);
        want_b = true;
        break;
      case BinaryOp::pow:
      case BinaryOp::maximum:
      case BinaryOp::minimum:
        want_a = want_b = true;
        break;
      default:
        break;
    }
    if (want_a) node->a_ = Saved::input(a, r.edges[0]);
    if (want_b) node->b_ = Saved::input(b, r.edges[1]);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.binary(op, detail::to_inner(a), detail::to_inner(b), o);
  if (node && op == BinaryOp::pow && r.any(1)) node->y_ = Saved::output(out);
  detail::end_write(out, node);
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    Tensor& out) {
  detail::Recording r = detail::record({&a, &b}, out.dtype());
  std::shared_ptr<WhereNode> node;
  if (r.active) {
    node = std::make_shared<WhereNode>(r.edges, out);
    node->cond_ = Saved::input(cond, nullptr);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.where(detail::to_inner(cond), detail::to_inner(a), detail::to_inner(b),
               o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
