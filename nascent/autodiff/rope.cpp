// rope: a rotation of each pair by theta, so dx is g turned by -theta (rope
// with `inverse` flipped), itself a recorded rope under create_graph. The
// positions and freq_factors get no gradient.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class RopeNode final : public detail::Node {
 public:
  RopeNode(const RopeParams& p, std::vector<Edge> next, const Tensor& out)
      : Node("rope", std::move(next), out), p_(p) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    RopeParams inverse = p_;
    inverse.inverse = !p_.inverse;
    const Tensor ff =
        freq_factors_.defined() ? freq_factors_.get(*this) : Tensor();
    return {nascent::rope(g, positions_.get(*this), inverse,
                          ff.defined() ? &ff : nullptr)};
  }
  void release() override {
    released_ = released_ || positions_.defined() || freq_factors_.defined();
    positions_.reset();
    freq_factors_.reset();
  }

  Saved positions_, freq_factors_;

 private:
  RopeParams p_;
};

}  // namespace

void Backend::rope(const Tensor& x, const Tensor& positions,
                   const Tensor* freq_factors, const RopeParams& p,
                   Tensor& out) {
  detail::Recording r = detail::record({&x}, out.dtype());
  std::shared_ptr<RopeNode> node;
  if (r.active) {
    node = std::make_shared<RopeNode>(p, r.edges, out);
    node->positions_ = Saved::input(positions, nullptr);
    if (freq_factors != nullptr) {
      node->freq_factors_ = Saved::input(*freq_factors, nullptr);
    }
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  Tensor ff =
      freq_factors != nullptr ? detail::to_inner(*freq_factors) : Tensor();
  inner_.rope(detail::to_inner(x), detail::to_inner(positions),
              freq_factors != nullptr ? &ff : nullptr, p, o);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
