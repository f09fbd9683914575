// layer_norm and rms_norm over the columns of x [rows, cols]. With
// xhat = (x - mean) * rstd (layer) or x * rstd (rms) and gh = g * weight:
//   layer: dx = rstd (gh - mean(gh) - xhat mean(gh xhat))
//   rms:   dx = rstd (gh - xhat mean(gh xhat))
//   dweight = sum over rows of g xhat, dbias = sum over rows of g.
// The backend's mean and rstd are reused; under create_graph they are
// recomputed from x with differentiable ops instead.
#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

class NormNode final : public detail::Node {
 public:
  NormNode(NormOp op, double eps, std::vector<Edge> next, const Tensor& out)
      : Node(nascent::name(op), std::move(next), out), op_(op), eps_(eps) {}

  std::vector<Tensor> apply(const Tensor& g) override;
  void release() override {
    released_ = released_ || x_.defined() || w_.defined() || mean_.defined() ||
                rstd_.defined();
    x_.reset();
    w_.reset();
    mean_.reset();
    rstd_.reset();
  }

  Saved x_, w_, mean_, rstd_;

 private:
  NormOp op_;
  double eps_;
};

std::vector<Tensor> NormNode::apply(const Tensor& g) {
  const bool layer = op_ == NormOp::layer_norm;
  const Tensor x = x_.get(*this);
  const int64_t rows = x.shape(0);
  Tensor mu, rstd;
  if (grad_enabled()) {
    Tensor centred = x;
    if (layer) {
      mu = mean(x, {1}, true);
      centred = sub(x, mu);
    }
    rstd = rsqrt(add(mean(square(centred), {1}, true), eps_));
  } else {
    if (layer) mu = mean_.get(*this).cast(x.dtype()).reshape({rows, 1});
    rstd = rstd_.get(*this).cast(x.dtype()).reshape({rows, 1});
  }
  Tensor xhat = mul(layer ? sub(x, mu) : x, rstd);
  std::vector<Tensor> out(3);
  if (needs(1)) out[1] = sum(mul(g, xhat), {0});
  if (needs(2)) out[2] = sum(g, {0});
  if (needs(0)) {
    Tensor gh = w_.defined() ? mul(g, w_.get(*this)) : g;
    Tensor inner = mean(mul(gh, xhat), {1}, true);
    Tensor d = sub(gh, mul(xhat, inner));
    if (layer) d = sub(d, mean(gh, {1}, true));
    out[0] = mul(d, rstd);
  }
  return out;
}

}  // namespace

void Backend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                   const Tensor* bias, double eps, Tensor& out, Tensor* mean,
                   Tensor* rstd) {
  detail::Recording r = detail::record({&x, weight, bias}, out.dtype());
  std::shared_ptr<NormNode> node;
  if (r.active) {
    node = std::make_shared<NormNode>(op, eps, r.edges, out);
    node->x_ = Saved::input(x, r.edges[0]);
    if (weight != nullptr && r.any(0)) {
      node->w_ = Saved::input(*weight, r.edges[1]);
    }
  }
  // The statistics the rule reuses, asked for when the caller did not.
  const DType stat = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor own_mean, own_rstd;
  if (node && mean == nullptr && op == NormOp::layer_norm) {
    own_mean = Tensor::empty({x.shape(0)}, stat, *this);
  }
  if (node && rstd == nullptr) {
    own_rstd = Tensor::empty({x.shape(0)}, stat, *this);
  }
  Tensor* m = own_mean.defined() ? &own_mean : mean;
  Tensor* s = own_rstd.defined() ? &own_rstd : rstd;
  detail::begin_write(out, node != nullptr);
  for (Tensor* t : {m, s}) {
    if (t != nullptr) detail::begin_write(*t, false);
  }
  Tensor o = detail::to_inner(out);
  Tensor w_in = weight != nullptr ? detail::to_inner(*weight) : Tensor();
  Tensor b_in = bias != nullptr ? detail::to_inner(*bias) : Tensor();
  Tensor m_in = m != nullptr ? detail::to_inner(*m) : Tensor();
  Tensor s_in = s != nullptr ? detail::to_inner(*s) : Tensor();
  inner_.norm(op, detail::to_inner(x), weight != nullptr ? &w_in : nullptr,
              bias != nullptr ? &b_in : nullptr, eps, o,
              m != nullptr ? &m_in : nullptr, s != nullptr ? &s_in : nullptr);
  for (Tensor* t : {m, s}) {
    if (t != nullptr) detail::end_write(*t, nullptr);
  }
  if (node) {
    if (m != nullptr) node->mean_ = Saved::input(*m, nullptr);
    node->rstd_ = Saved::input(*s, nullptr);
  }
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
