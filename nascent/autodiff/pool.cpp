// Pooling. max_pool2d routes each gradient to the element the forward
// picked (on ties, the one the backend's index names, as PyTorch); the
// backward ops are linear, so they get rules too (gather, avg_pool2d),
// which gives gradients of gradients.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class PoolNode final : public detail::Node {
 public:
  PoolNode(PoolOp op, const Pool2dParams& p, std::vector<Edge> next,
           const Tensor& x, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out),
        op_(op),
        p_(p),
        x_shape_(x.shape()) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    switch (op_) {
      case PoolOp::max_pool2d:
        return {max_pool2d_backward(g, indices_.get(*this), x_shape_, p_)};
      case PoolOp::avg_pool2d:
        return {avg_pool2d_backward(g, x_shape_, p_)};
      case PoolOp::max_pool2d_backward: {  // x = grad_out, g is [N, C, H, W]
        const Tensor idx = indices_.get(*this);
        const int64_t n = idx.shape(0), c = idx.shape(1);
        Tensor picked =
            gather(g.reshape({n, c, -1}), 2, idx.reshape({n, c, -1}));
        return {picked.reshape(x_shape_)};
      }
      case PoolOp::avg_pool2d_backward:
        return {avg_pool2d(g, p_)};
    }
    return {};
  }
  void release() override {
    released_ = released_ || indices_.defined();
    indices_.reset();
  }

  Saved indices_;

 private:
  PoolOp op_;
  Pool2dParams p_;
  Shape x_shape_;
};

}  // namespace

void Backend::pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
                     const Pool2dParams& p, Tensor& out, Tensor* out_indices) {
  detail::Recording r = detail::record({&x}, out.dtype());
  std::shared_ptr<PoolNode> node;
  if (r.active) {
    node = std::make_shared<PoolNode>(op, p, r.edges, x, out);
    if (op == PoolOp::max_pool2d_backward) {
      node->indices_ = Saved::input(*indices, nullptr);
    }
  }
  // max_pool2d needs the picked positions for its gradient even when the
  // caller does not ask for them.
  Tensor own_indices;
  if (node && op == PoolOp::max_pool2d && out_indices == nullptr) {
    own_indices = Tensor::empty(out.shape(), DType::i64, *this);
  }
  Tensor* want_indices = own_indices.defined() ? &own_indices : out_indices;
  detail::begin_write(out, node != nullptr);
  if (want_indices != nullptr) detail::begin_write(*want_indices, false);
  Tensor o = detail::to_inner(out);
  Tensor idx_in = indices != nullptr ? detail::to_inner(*indices) : Tensor();
  Tensor idx_out =
      want_indices != nullptr ? detail::to_inner(*want_indices) : Tensor();
  inner_.pool2d(op, detail::to_inner(x), indices != nullptr ? &idx_in : nullptr,
                p, o, want_indices != nullptr ? &idx_out : nullptr);
  if (want_indices != nullptr) detail::end_write(*want_indices, nullptr);
  if (node && op == PoolOp::max_pool2d) {
    node->indices_ = Saved::input(*want_indices, nullptr);
  }
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
