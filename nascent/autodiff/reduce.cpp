// Reductions and cumsum. The backend's output keeps x's rank (size 1 on the
// reduced axes), so every gradient is that output's gradient broadcast back
// over x.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class ReduceNode final : public detail::Node {
 public:
  ReduceNode(ReduceOp op, const std::vector<int>& axes, const ReduceParams& p,
             std::vector<Edge> next, const Tensor& x, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out),
        op_(op),
        p_(p),
        x_shape_(x.shape()) {
    for (int a : axes) {
      axes_.push_back(a);
      count_ *= x.shape()[size_t(a)];
    }
  }

  std::vector<Tensor> apply(const Tensor& g) override;
  void release() override {
    released_ = released_ || x_.defined() || y_.defined();
    x_.reset();
    y_.reset();
  }

  Saved x_, y_;

 private:
  ReduceOp op_;
  ReduceParams p_;
  Shape x_shape_;
  Axes axes_;
  int64_t count_ = 1;  // Elements reduced into each output.
};

std::vector<Tensor> ReduceNode::apply(const Tensor& g) {
  const Tensor x = x_.defined() ? x_.get(*this) : Tensor();
  const Tensor y = y_.defined() ? y_.get(*this) : Tensor();
  switch (op_) {
    case ReduceOp::sum:
      return {g.expand(x_shape_)};
    case ReduceOp::mean:
      return {mul(g, 1.0 / double(count_)).expand(x_shape_)};
    case ReduceOp::max:
    case ReduceOp::min: {
      // Ties share the gradient evenly (PyTorch's amax/amin).
      Tensor hit = eq(x, y).cast(g.dtype());
      return {mul(hit, div(g, sum(hit, axes_, true)))};
    }
    case ReduceOp::prod: {
      // The product of the others, exact with zeros: without a zero it is
      // prod / x; with one zero only that element gets the product of the
      // rest; with two or more every gradient is 0.
      Tensor zero = eq(x, 0.0);
      Tensor nonzero = where(logical_not(zero), x, 1.0);
      Tensor others = div(prod(nonzero, axes_, true), nonzero);
      Tensor zeros_seen = sum(zero, axes_, true);
      Tensor keep = logical_or(eq(zeros_seen, int64_t(0)),
                               logical_and(eq(zeros_seen, int64_t(1)), zero));
      return {where(keep, mul(g, others), 0.0)};
    }
    case ReduceOp::var: {
      const double denom = double(count_ - p_.correction);
      Tensor centred = sub(x, mean(x, axes_, true));
      if (p_.take_sqrt) {  // std: d sqrt(v) = dv / (2 sqrt(v))
        return {div(mul(g, centred), mul(y, denom))};
      }
      return {mul(mul(g, centred), 2.0 / denom)};
    }
    case ReduceOp::logsumexp:
      return {mul(g, exp(sub(x, y)))};
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      break;
  }
  throw Error(std::string("autodiff: no gradient for ") + nascent::name(op_));
}

// cumsum's gradient is the reversed cumulative sum of the gradient.
class ScanNode final : public detail::Node {
 public:
  ScanNode(int axis, std::vector<Edge> next, const Tensor& out)
      : Node("cumsum", std::move(next), out), axis_(axis) {}
  std::vector<Tensor> apply(const Tensor& g) override {
    return {flip(cumsum(flip(g, {axis_}), axis_), {axis_})};
  }

 private:
  int axis_;
};

}  // namespace

void Backend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
                     const ReduceParams& p, Tensor& out) {
  detail::Recording r =
      detail::record({&x}, out.dtype(), info(op_of(op)).differentiable);
  std::shared_ptr<ReduceNode> node;
  if (r.active) {
    node = std::make_shared<ReduceNode>(op, axes, p, r.edges, x, out);
    if (op != ReduceOp::sum && op != ReduceOp::mean) {
      node->x_ = Saved::input(x, r.edges[0]);
    }
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.reduce(op, detail::to_inner(x), axes, p, o);
  if (node &&
      (op == ReduceOp::max || op == ReduceOp::min ||
       op == ReduceOp::logsumexp || (op == ReduceOp::var && p.take_sqrt))) {
    node->y_ = Saved::output(out);
  }
  detail::end_write(out, node);
}

void Backend::scan(ScanOp op, const Tensor& x, int axis, Tensor& out) {
  detail::Recording r = detail::record({&x}, out.dtype());
  std::shared_ptr<ScanNode> node;
  if (r.active) node = std::make_shared<ScanNode>(axis, r.edges, out);
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.scan(op, detail::to_inner(x), axis, o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
