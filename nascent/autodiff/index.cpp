// gather, scatter_add and index_select: the gradient of a gather is a
// scatter_add and the other way round (index_select is a gather whose index
// is broadcast along the other axes); embedding is an index_select.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class IndexNode final : public detail::Node {
 public:
  IndexNode(IndexOp op, int axis, std::vector<Edge> next, const Tensor& x,
            const Tensor* src, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out),
        op_(op),
        axis_(axis),
        x_shape_(x.shape()),
        src_shape_(src != nullptr ? src->shape() : Shape{}) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor index = index_.get(*this);
    std::vector<Tensor> out(2);
    switch (op_) {
      case IndexOp::gather:
        out[0] = scatter_add(zeros(x_shape_, g.backend(), g.dtype()), axis_,
                             index, g);
        break;
      case IndexOp::index_select: {
        Shape s(x_shape_.size(), 1);
        s[size_t(axis_)] = index.numel();
        out[0] = scatter_add(zeros(x_shape_, g.backend(), g.dtype()), axis_,
                             index.reshape(s).expand(g.shape()), g);
        break;
      }
      case IndexOp::scatter_add:
        out[0] = g;
        if (needs(1)) {
          // src elements beyond the index's extent were not added.
          Tensor picked = gather(g, axis_, index);
          std::vector<int64_t> pads;
          for (size_t d = src_shape_.size(); d-- > 0;) {
            pads.insert(pads.end(), {0, src_shape_[d] - index.shape()[d]});
          }
          out[1] = picked.shape() == src_shape_ ? picked : pad(picked, pads);
        }
        break;
    }
    return out;
  }
  void release() override {
    released_ = released_ || index_.defined();
    index_.reset();
  }

  Saved index_;

 private:
  IndexOp op_;
  int axis_;
  Shape x_shape_, src_shape_;
};

}  // namespace

void Backend::index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
                    const Tensor* src, Tensor& out) {
  detail::Recording r = detail::record({&x, src}, out.dtype());
  std::shared_ptr<IndexNode> node;
  if (r.active) {
    node = std::make_shared<IndexNode>(op, axis, r.edges, x, src, out);
    node->index_ = Saved::input(index, nullptr);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  Tensor src_in = src != nullptr ? detail::to_inner(*src) : Tensor();
  inner_.index(op, detail::to_inner(x), axis, detail::to_inner(index),
               src != nullptr ? &src_in : nullptr, o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
