// Element-wise unary ops. Each rule is written with the core front-ends on
// saved tensors that carry their history under create_graph, so the
// gradient is differentiable again.
#include <cmath>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

namespace {

using detail::Edge;
using detail::Saved;

constexpr double kPi = 3.14159265358979323846;

// Which tensor a rule needs: the input, the output, or neither.
enum class Needs { nothing, input, output };

Needs needs_of(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp:
    case UnaryOp::expm1:
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
    case UnaryOp::relu:
    case UnaryOp::reciprocal:
      return Needs::output;
    case UnaryOp::neg:
      return Needs::nothing;
    default:
      return Needs::input;
  }
}

class UnaryNode final : public detail::Node {
 public:
  UnaryNode(UnaryOp op, const UnaryParams& p, std::vector<Edge> next,
            const Tensor& out)
      : Node(nascent::name(op), std::move(next), out), op_(op), p_(p) {}

  std::vector<Tensor> apply(const Tensor& g) override {
    const Tensor x = x_.defined() ? x_.get(*this) : Tensor();
    const Tensor y = y_.defined() ? y_.get(*this) : Tensor();
    return {rule(g, x, y)};
  }
  void release() override {
    released_ = released_ || x_.defined() || y_.defined();
    x_.reset();
    y_.reset();
  }

  Saved x_, y_;

 private:
  Tensor rule(const Tensor& g, const Tensor& x, const Tensor& y) const;

  UnaryOp op_;
  UnaryParams p_;
};

Tensor UnaryNode::rule(const Tensor& g, const Tensor& x,
                       const Tensor& y) const {
  switch (op_) {
    case UnaryOp::neg:
      return neg(g);
    case UnaryOp::abs:
      return mul(g, sign(x));
    case UnaryOp::exp:
      return mul(g, y);
    case UnaryOp::log:
      return div(g, x);
    case UnaryOp::log1p:
      return div(g, add(x, 1.0));
    case UnaryOp::expm1:
      return mul(g, add(y, 1.0));
    case UnaryOp::sqrt:
      return div(mul(g, 0.5), y);
    case UnaryOp::rsqrt:  // -x^-3/2 / 2 = -y^3 / 2
      return mul(mul(g, -0.5), mul(y, square(y)));
    case UnaryOp::sin:
      return mul(g, cos(x));
    case UnaryOp::cos:
      return neg(mul(g, sin(x)));
    case UnaryOp::tanh:
      return mul(g, 1.0 - square(y));
    case UnaryOp::sigmoid:
      return mul(g, mul(y, 1.0 - y));
    case UnaryOp::relu:  // 0 at 0, as PyTorch.
      return where(gt(y, 0.0), g, 0.0);
    case UnaryOp::gelu: {  // Phi(x) + x phi(x)
      Tensor cdf = mul(add(erf(mul(x, 1.0 / std::sqrt(2.0))), 1.0), 0.5);
      Tensor pdf = mul(exp(mul(square(x), -0.5)), 1.0 / std::sqrt(2.0 * kPi));
      return mul(g, add(cdf, mul(x, pdf)));
    }
    case UnaryOp::gelu_tanh:
    case UnaryOp::silu:
      return mul(g, detail::activation_derivative(op_, x));
    case UnaryOp::erf:
      return mul(g, mul(exp(neg(square(x))), 2.0 / std::sqrt(kPi)));
    case UnaryOp::reciprocal:
      return neg(mul(g, square(y)));
    case UnaryOp::square:
      return mul(g, mul(x, 2.0));
    case UnaryOp::clamp:  // Passes inside [low, high], bounds included.
      return where(logical_and(ge(x, p_.a), le(x, p_.b)), g, 0.0);
    case UnaryOp::pow_scalar:
      if (p_.a == 0.0) return mul(g, 0.0);
      return mul(g, mul(pow(x, p_.a - 1.0), p_.a));
    case UnaryOp::sign:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::logical_not:
      break;  // Not differentiable: never recorded.
  }
  throw Error(std::string("autodiff: no gradient for ") + nascent::name(op_));
}

}  // namespace

namespace detail {

Tensor activation_derivative(UnaryOp op, const Tensor& x) {
  switch (op) {
    case UnaryOp::gelu_tanh: {
      const double k = std::sqrt(2.0 / kPi), c = 0.044715;
      Tensor x2 = square(x);
      Tensor t = tanh(mul(mul(add(mul(x2, c), 1.0), x), k));
      Tensor du = mul(add(mul(x2, 3.0 * c), 1.0), k);
      return add(mul(add(t, 1.0), 0.5),
                 mul(mul(mul(x, 0.5), 1.0 - square(t)), du));
    }
    case UnaryOp::silu: {  // s (1 + x (1 - s))
      Tensor s = sigmoid(x);
      return mul(s, add(mul(x, 1.0 - s), 1.0));
    }
    default:
      break;
  }
  throw Error(std::string("autodiff: activation_derivative has no rule for ") +
              nascent::name(op));
}

}  // namespace detail

void Backend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                    Tensor& out) {
  detail::Recording r =
      detail::record({&x}, out.dtype(), info(op_of(op)).differentiable);
  std::shared_ptr<UnaryNode> node;
  if (r.active) {
    node = std::make_shared<UnaryNode>(op, p, r.edges, out);
    if (needs_of(op) == Needs::input) node->x_ = Saved::input(x, r.edges[0]);
  }
  detail::begin_write(out, node != nullptr);
  Tensor o = detail::to_inner(out);
  inner_.unary(op, detail::to_inner(x), p, o);
  if (node && needs_of(op) == Needs::output) node->y_ = Saved::output(out);
  detail::end_write(out, node);
}

}  // namespace nascent::autodiff
