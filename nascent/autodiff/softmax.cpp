// softmax: dx = y (g - sum(g y)); log_softmax: dx = g - e^y sum(g), sums
// along the axis.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class SoftmaxNode final : public detail::Node {
 public:
  SoftmaxNode(SoftmaxOp op, int axis, std::vector<Edge> next, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out), op_(op), axis_(axis) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor y = y_.get(*this);
    if (op_ == SoftmaxOp::softmax) {
      return {mul(y, sub(g, sum(mul(g, y), {axis_}, true)))};
    }
    return {sub(g, mul(exp(y), sum(g, {axis_}, true)))};
  }
  void release() override {
    released_ = released_ || y_.defined();
    y_.reset();
  }

  Saved y_;

 private:
  SoftmaxOp op_;
  int axis_;
};

}  // namespace

void Backend::softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) {
  detail::Recording r = detail::record({&x}, out.dtype());
  std::shared_ptr<SoftmaxNode> node;
  if (r.active) node = std::make_shared<SoftmaxNode>(op, axis, r.edges, out);
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.softmax(op, detail::to_inner(x), axis, o);
  if (node) node->y_ = Saved::output(out);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
