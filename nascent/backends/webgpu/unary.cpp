// Element-wise unary ops. The float kernels compute in f32: WGSL's
// builtins where they are exact (sqrt, floor...), math.cpp's functions for
// the transcendental ones, whose builtins are not accurate enough.

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// The expression of `op` on `a` of dtype dt (real ops get f32 only: the
// front-end casts their integer inputs).
std::string expression(UnaryOp op, DType dt) {
  const bool f = dt == DType::f32;
  const bool i = dt == DType::i32;
  using U = UnaryOp;
  switch (op) {
    case U::neg:
      return f || i ? "-a" : "0u - a";
    case U::abs:
      return f || i ? "abs(a)" : "a";
    case U::sign:
      if (f)
        return "select(select(select(0.0, 1.0, a > 0.0), -1.0, a < 0.0), a, "
               "is_nan(a))";
      if (i) return "select(select(0, 1, a > 0), -1, a < 0)";
      return "select(0u, 1u, a > 0u)";
    case U::relu:
      if (f) return "select(a, 0.0, a < 0.0)";
      return i ? "max(a, 0)" : "a";
    case U::square:
      return "a * a";
    case U::clamp:
      // NaN stays NaN: the comparisons fail.
      if (f) return "clamp_f(a, X(0u), X(1u))";
      if (i) return "clamp_i(a, XI(0u), XI(1u))";
      return "clamp_u(a, XU(0u), XU(1u))";
    case U::floor:
      return f ? "floor(a)" : "a";
    case U::ceil:
      return f ? "ceil(a)" : "a";
    case U::round:
      return f ? "round(a)" : "a";  // WGSL rounds half to even.
    case U::logical_not:
      return f   ? "select(1u, 0u, nz_f(a))"
             : i ? "select(0u, 1u, a == 0)"
                 : "select(0u, 1u, a == 0u)";
    case U::sqrt:
      return "sqrt(a)";
    case U::reciprocal:
      return "1.0 / a";
    case U::rsqrt:
      return "1.0 / sqrt(a)";  // inverseSqrt may be a 12-bit estimate.
    case U::exp:
      return "exp_f(a)";
    case U::log:
      return "log_f(a)";
    case U::log1p:
      return "log1p_f(a)";
    case U::expm1:
      return "expm1_f(a)";
    case U::sin:
      return "sin_f(a)";
    case U::cos:
      return "cos_f(a)";
    case U::tanh:
      return "tanh_f(a)";
    case U::sigmoid:
      return "sigmoid_f(a)";
    case U::gelu:
      return "gelu_f(a)";
    case U::gelu_tanh:
      return "gelu_tanh_f(a)";
    case U::silu:
      return "silu_f(a)";
    case U::erf:
      return "erf_f(a)";
    case U::pow_scalar:
      return "pow_f(a, X(0u))";
  }
  return "";
}

bool uses_math(UnaryOp op) {
  using U = UnaryOp;
  switch (op) {
    case U::exp:
    case U::log:
    case U::log1p:
    case U::expm1:
    case U::sin:
    case U::cos:
    case U::tanh:
    case U::sigmoid:
    case U::gelu:
    case U::gelu_tanh:
    case U::silu:
    case U::erf:
    case U::pow_scalar:
      return true;
    default:
      return false;
  }
}

const char* kHelpers = R"(
fn clamp_f(v: f32, lo: f32, hi: f32) -> f32 {
  var r = v;
  if (r < lo) { r = lo; }
  if (r > hi) { r = hi; }
  return r;
}
fn clamp_i(v: i32, lo: i32, hi: i32) -> i32 { return min(max(v, lo), hi); }
fn clamp_u(v: u32, lo: u32, hi: u32) -> u32 { return min(max(v, lo), hi); }
)";

// A bound of clamp as the tensor's dtype holds it (the front-end passes
// integral bounds for integer tensors).
uint32_t bound_word(double v, DType dt) {
  if (dt == DType::f32) return f32_word(v);
  if (dt == DType::i32) return uint32_t(from_double<int32_t>(v));
  return uint32_t(from_double<uint8_t>(v));
}

}  // namespace

void Backend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                    Tensor& out) {
  const char* op_name = nascent::name(op);
  check_dtype(*ctx_, op_name, x);
  check_dtype(*ctx_, op_name, out);
  const std::string body = expression(op, x.dtype());
  // The math library only where the body calls it (compile time).
  const std::string helpers =
      std::string(kHelpers) + (uses_math(op) ? math_wgsl() : "");
  const uint32_t words[2] = {bound_word(p.a, x.dtype()),
                             bound_word(p.b, x.dtype())};
  const Tensor* in[] = {&x};
  elementwise(*ctx_, op_name, std::string("unary_") + op_name, helpers, body,
              in, out, words);
}

}  // namespace nascent::webgpu
