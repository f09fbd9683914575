// Element-wise unary ops: dtype rules, then one backend call.
#include <cmath>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// Which dtypes an op accepts and what it computes in (op_table.h).
using Domain = UnaryDomain;

Domain domain_of(UnaryOp op) {
  return traits(op).domain;
}

bool is_integral(double v) {
  return v == std::floor(v);
}

void check_clamp_bounds(const Tensor& x, const UnaryParams& p) {
  if (std::isnan(p.a) || std::isnan(p.b) || p.a > p.b) {
    throw ValueError(fmt::format(
        "clamp: need lower bound <= upper bound, got {} and {} for {}", p.a,
        p.b, x.to_string()));
  }
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, const UnaryParams& p) {
  const char* op_name = name(op);
  Backend& backend = detail::common_backend(op_name, {&x});
  Tensor in = x;
  switch (domain_of(op)) {
    case Domain::real:
      in = x.cast(to_floating(x.dtype()));
      break;
    case Domain::numeric:
      detail::check_dtype(x.dtype() != DType::boolean, op_name, x,
                          "a number type (not bool)");
      if (op == UnaryOp::clamp) {
        check_clamp_bounds(x, p);
        // A fractional bound takes an integer tensor to f32, as a
        // fractional scalar does in binary ops (and as PyTorch).
        if (!is_floating(x.dtype()) &&
            !(is_integral(p.a) && is_integral(p.b))) {
          in = x.cast(DType::f32);
        }
      }
      break;
    case Domain::rounding:
      detail::check_dtype(x.dtype() != DType::boolean, op_name, x,
                          "a number type (not bool)");
      if (!is_floating(x.dtype())) return x.clone();
      break;
    case Domain::logical:
      in = x.cast(DType::boolean);
      break;
  }
  Tensor out = detail::new_output(in.shape(), in.dtype(), backend);
  backend.unary(op, in, p, out);
  return out;
}

Tensor neg(const Tensor& x) {
  return unary(UnaryOp::neg, x);
}
Tensor abs(const Tensor& x) {
  return unary(UnaryOp::abs, x);
}
Tensor sign(const Tensor& x) {
  return unary(UnaryOp::sign, x);
}
Tensor exp(const Tensor& x) {
  return unary(UnaryOp::exp, x);
}
Tensor log(const Tensor& x) {
  return unary(UnaryOp::log, x);
}
Tensor log1p(const Tensor& x) {
  return unary(UnaryOp::log1p, x);
}
Tensor expm1(const Tensor& x) {
  return unary(UnaryOp::expm1, x);
}
Tensor sqrt(const Tensor& x) {
  return unary(UnaryOp::sqrt, x);
}
Tensor rsqrt(const Tensor& x) {
  return unary(UnaryOp::rsqrt, x);
}
Tensor sin(const Tensor& x) {
  return unary(UnaryOp::sin, x);
}
Tensor cos(const Tensor& x) {
  return unary(UnaryOp::cos, x);
}
Tensor tanh(const Tensor& x) {
  return unary(UnaryOp::tanh, x);
}
Tensor sigmoid(const Tensor& x) {
  return unary(UnaryOp::sigmoid, x);
}
Tensor relu(const Tensor& x) {
  return unary(UnaryOp::relu, x);
}
Tensor gelu(const Tensor& x) {
  return unary(UnaryOp::gelu, x);
}
Tensor gelu_tanh(const Tensor& x) {
  return unary(UnaryOp::gelu_tanh, x);
}
Tensor silu(const Tensor& x) {
  return unary(UnaryOp::silu, x);
}
Tensor erf(const Tensor& x) {
  return unary(UnaryOp::erf, x);
}
Tensor floor(const Tensor& x) {
  return unary(UnaryOp::floor, x);
}
Tensor ceil(const Tensor& x) {
  return unary(UnaryOp::ceil, x);
}
Tensor round(const Tensor& x) {
  return unary(UnaryOp::round, x);
}
Tensor reciprocal(const Tensor& x) {
  return unary(UnaryOp::reciprocal, x);
}
Tensor square(const Tensor& x) {
  return unary(UnaryOp::square, x);
}
Tensor logical_not(const Tensor& x) {
  return unary(UnaryOp::logical_not, x);
}

Tensor clamp(const Tensor& x, double low, double high) {
  return unary(UnaryOp::clamp, x, UnaryParams{low, high});
}

Tensor pow(const Tensor& x, double exponent) {
  return unary(UnaryOp::pow_scalar, x, UnaryParams{exponent, 0.0});
}

Tensor operator-(const Tensor& x) {
  return neg(x);
}

}  // namespace nascent
