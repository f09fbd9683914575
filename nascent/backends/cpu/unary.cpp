// Element-wise unary kernels. Contiguous float runs go to the SIMD kernels
// (unary_simd.cpp); the scalar loops below cover strided runs, integers and
// what has no SIMD path. Scalar transcendentals of f32/f16/bf16 are
// computed in double and rounded once.
#include <cmath>

#include "nascent/backends/cpu/elementwise.h"
#include "nascent/backends/cpu/simd/runs.h"

namespace nascent::cpu {

namespace {

// gelu, gelu_tanh and silu in forms that keep their relative precision
// for negative x (no 1 + erf or 1 + tanh cancellation), with the limit 0 at
// -inf.
double gelu_erf(double x) {
  if (x == -INFINITY) return 0.0;
  return 0.5 * x * std::erfc(-x * 0.70710678118654752440);
}
double gelu_tanh_approx(double x) {
  if (x == -INFINITY) return 0.0;
  const double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));  // 0.5 x (1 + tanh(u)).
}
double silu(double x) {
  if (x == -INFINITY) return 0.0;
  return x / (1.0 + std::exp(-x));
}

// Ops that take a few instructions per element (op_table.h); the others
// (exp, erf...) cost tens, so fewer elements fill a thread's task.
bool is_cheap(UnaryOp op) {
  return traits(op).cheap;
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& x, const UnaryParams& p,
                 Tensor& out) {
  using C = compute_t<T>;
  const bool has_simd = simd::has_unary(op, dtype_of<T>, p);
  const UnaryRun vector_run = [&](const void* s, void* d, int64_t n) {
    simd::unary(op, dtype_of<T>, s, d, n, p);
  };
  const int64_t grain = is_cheap(op) ? kElementwiseGrain : kTranscendentalGrain;
  auto run = [&](auto fn) {
    map_unary<T, T>(x, out, fn, has_simd ? &vector_run : nullptr, grain);
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (op == UnaryOp::logical_not) return run([](bool v) { return !v; });
  } else {
    switch (op) {
      case UnaryOp::neg:  // -v, not 0 - v: neg(+0) is -0.
        return run([](C v) {
          if constexpr (std::is_floating_point_v<C>) {
            return -v;
          } else {
            return wrap_sub(C(0), v);
          }
        });
      case UnaryOp::abs:
        return run([](C v) {
          if constexpr (std::is_floating_point_v<C>) {
            return std::fabs(v);  // -0 becomes +0.
          } else {
            return v < C(0) ? wrap_sub(C(0), v) : v;
          }
        });
      case UnaryOp::sign:
        return run([](C v) {
          if constexpr (std::is_floating_point_v<C>) {
            if (v != v) return v;  // NaN stays NaN.
          }
          return C((C(0) < v) - (v < C(0)));
        });
      case UnaryOp::relu:  // NaN stays NaN.
        return run([](C v) { return v < C(0) ? C(0) : v; });
      case UnaryOp::square:
        return run([](C v) { return wrap_mul(v, v); });
      case UnaryOp::clamp: {
        const double lo = p.a, hi = p.b;
        return run([lo, hi](C v) {
          if constexpr (std::is_floating_point_v<C>) {
            if (v != v) return v;  // NaN stays NaN, as in PyTorch.
          }
          double d = double(v);
          return d < lo ? from_double<C>(lo) : d > hi ? from_double<C>(hi) : v;
        });
      }
      case UnaryOp::exp:
      case UnaryOp::log:
      case UnaryOp::log1p:
      case UnaryOp::expm1:
      case UnaryOp::sqrt:
      case UnaryOp::rsqrt:
      case UnaryOp::sin:
      case UnaryOp::cos:
      case UnaryOp::tanh:
      case UnaryOp::sigmoid:
      case UnaryOp::gelu:
      case UnaryOp::gelu_tanh:
      case UnaryOp::silu:
      case UnaryOp::erf:
      case UnaryOp::floor:
      case UnaryOp::ceil:
      case UnaryOp::round:
      case UnaryOp::reciprocal:
      case UnaryOp::pow_scalar:
      case UnaryOp::logical_not:
        break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      // Math in double: exact enough that the one rounding to C is all.
      auto math = [&](double (*f)(double)) {
        return run([f](C v) { return C(f(double(v))); });
      };
      switch (op) {
        case UnaryOp::exp:
          return math([](double v) { return std::exp(v); });
        case UnaryOp::log:
          return math([](double v) { return std::log(v); });
        case UnaryOp::log1p:
          return math([](double v) { return std::log1p(v); });
        case UnaryOp::expm1:
          return math([](double v) { return std::expm1(v); });
        case UnaryOp::sqrt:
          return run([](C v) { return std::sqrt(v); });
        case UnaryOp::rsqrt:
          return math([](double v) { return 1.0 / std::sqrt(v); });
        case UnaryOp::sin:
          return math([](double v) { return std::sin(v); });
        case UnaryOp::cos:
          return math([](double v) { return std::cos(v); });
        case UnaryOp::tanh:
          return math([](double v) { return std::tanh(v); });
        case UnaryOp::sigmoid:
          return math([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
        case UnaryOp::gelu:
          return math(gelu_erf);
        case UnaryOp::gelu_tanh:
          return math(gelu_tanh_approx);
        case UnaryOp::silu:
          return math(silu);
        case UnaryOp::erf:
          return math([](double v) { return std::erf(v); });
        case UnaryOp::floor:
          return run([](C v) { return std::floor(v); });
        case UnaryOp::ceil:
          return run([](C v) { return std::ceil(v); });
        case UnaryOp::round:
          // Half to even (the default rounding mode), as PyTorch.
          return run([](C v) { return std::nearbyint(v); });
        case UnaryOp::reciprocal:
          return run([](C v) { return C(1) / v; });
        case UnaryOp::pow_scalar: {
          const double e = p.a;
          return run([e](C v) { return C(std::pow(double(v), e)); });
        }
        case UnaryOp::neg:
        case UnaryOp::abs:
        case UnaryOp::sign:
        case UnaryOp::relu:
        case UnaryOp::square:
        case UnaryOp::clamp:
        case UnaryOp::logical_not:
          break;
      }
    }
  }
  throw BackendError(
      fmt::format("cpu: {} does not take {}", name(op), x.to_string()));
}

}  // namespace

void Backend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                    Tensor& out) {
  dispatch_dtype(x.dtype(),
                 [&](auto tag) { unary_typed<decltype(tag)>(op, x, p, out); });
}

}  // namespace nascent::cpu
