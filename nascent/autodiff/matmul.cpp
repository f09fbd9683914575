// matmul: d a = g b^T, d b = a^T g over the (broadcast) batch.
//
// As PyTorch's mm backward, a gradient comes out in its operand's memory
// layout: for a transposed operand (x @ W^T, Linear's weight) d b is
// computed as (g^T a)^T, so the weight's gradient is contiguous like the
// weight, and the optimizer's passes over it are not strided ones.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

// True when b repeats one [K, N] matrix over the whole batch (x @ W with a
// batched x): its gradient is then one GEMM over the folded batch instead
// of a gradient per batch entry that the view would sum.
// True when the matrices of t are stored column by column (a transpose of a
// row-major matrix).
bool column_major(const Tensor& t) {
  const int nd = t.ndim();
  return nd >= 2 && t.shape(-2) > 1 && t.shape(-1) > 1 &&
         t.strides()[size_t(nd - 2)] == 1 && t.strides()[size_t(nd - 1)] != 1;
}

bool shared_over_batch(const Tensor& b) {
  if (b.ndim() <= 2) return false;
  for (int d = 0; d < b.ndim() - 2; ++d) {
    if (b.shape()[size_t(d)] > 1 && b.strides()[size_t(d)] != 0) return false;
  }
  return true;
}

class MatmulNode final : public detail::Node {
 public:
  MatmulNode(std::vector<Edge> next, const Tensor& out, bool fold_b,
             Shape b_shape, bool a_column_major, bool b_column_major)
      : Node("matmul", std::move(next), out),
        fold_b_(fold_b),
        b_shape_(std::move(b_shape)),
        a_column_major_(a_column_major),
        b_column_major_(b_column_major) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    std::vector<Tensor> out(2);
    if (needs(0)) {
      const Tensor b = b_.get(*this);
      out[0] = a_column_major_
                   ? matmul(b, g.transpose(-1, -2)).transpose(-1, -2)
                   : matmul(g, b.transpose(-1, -2));
    }
    if (needs(1)) {
      const Tensor a = a_.get(*this);
      if (b_column_major_ && !fold_b_) {
        out[1] = matmul(g.transpose(-1, -2), a).transpose(-1, -2);
      } else if (fold_b_) {
        const int64_t k = a.shape(-1), n = g.shape(-1);
        out[1] =
            matmul(a.reshape({-1, k}).transpose(-1, -2), g.reshape({-1, n}))
                .reshape(b_shape_);
      } else {
        out[1] = matmul(a.transpose(-1, -2), g);
      }
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
  bool fold_b_;
  Shape b_shape_;  // Of b's edge: [1, ..., 1, K, N] when folded.
  bool a_column_major_, b_column_major_;
};

}  // namespace

void Backend::matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  // A batch-shared b is recorded as its [1, ..., 1, K, N] view.
  const bool fold_b = shared_over_batch(b);
  Tensor b_edge = b;
  if (fold_b) {
    Shape s = b.shape();
    for (size_t d = 0; d + 2 < s.size(); ++d) s[d] = 1;
    b_edge = b.as_strided(s, b.strides(), b.offset());
  }
  detail::Recording r = detail::record({&a, &b_edge}, out.dtype());
  std::shared_ptr<MatmulNode> node;
  if (r.active) {
    node = std::make_shared<MatmulNode>(r.edges, out, fold_b, b_edge.shape(),
                                        column_major(a), column_major(b));
    if (r.any(1)) node->a_ = Saved::input(a, r.edges[0]);
    if (r.any(0)) {
      node->b_ = Saved::input(b, fold_b ? detail::edge_of(b) : r.edges[1]);
    }
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.matmul(detail::to_inner(a), detail::to_inner(b), o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
