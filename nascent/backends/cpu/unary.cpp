// Element-wise unary kernels.
#include <cmath>

#include "nascent/backends/cpu/elementwise.h"

namespace nascent::cpu {

namespace {

template <class C>
C gelu_erf(C x) {
  return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
}
template <class C>
C gelu_tanh_approx(C x) {
  const C k = C(0.79788456080286535588);  // sqrt(2 / pi)
  return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& x, const UnaryParams& p,
                 Tensor& out) {
  using C = compute_t<T>;
  auto run = [&](auto fn) { map_unary<T, T>(x, out, fn); };
  if constexpr (std::is_same_v<T, bool>) {
    if (op == UnaryOp::logical_not) return run([](bool v) { return !v; });
  } else {
    switch (op) {
      case UnaryOp::neg: return run([](C v) { return C(-v); });
      case UnaryOp::abs:
        return run([](C v) { return v < C(0) ? C(-v) : v; });
      case UnaryOp::sign:
        return run([](C v) { return C((C(0) < v) - (v < C(0))); });
      case UnaryOp::relu: return run([](C v) { return v > C(0) ? v : C(0); });
      case UnaryOp::square: return run([](C v) { return C(v * v); });
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
      default: break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case UnaryOp::exp: return run([](C v) { return std::exp(v); });
        case UnaryOp::log: return run([](C v) { return std::log(v); });
        case UnaryOp::log1p: return run([](C v) { return std::log1p(v); });
        case UnaryOp::expm1: return run([](C v) { return std::expm1(v); });
        case UnaryOp::sqrt: return run([](C v) { return std::sqrt(v); });
        case UnaryOp::rsqrt:
          return run([](C v) { return C(1) / std::sqrt(v); });
        case UnaryOp::sin: return run([](C v) { return std::sin(v); });
        case UnaryOp::cos: return run([](C v) { return std::cos(v); });
        case UnaryOp::tanh: return run([](C v) { return std::tanh(v); });
        case UnaryOp::sigmoid:
          return run([](C v) { return C(1) / (C(1) + std::exp(-v)); });
        case UnaryOp::gelu: return run([](C v) { return gelu_erf(v); });
        case UnaryOp::gelu_tanh:
          return run([](C v) { return gelu_tanh_approx(v); });
        case UnaryOp::silu:
          return run([](C v) { return v / (C(1) + std::exp(-v)); });
        case UnaryOp::erf: return run([](C v) { return std::erf(v); });
        case UnaryOp::floor: return run([](C v) { return std::floor(v); });
        case UnaryOp::ceil: return run([](C v) { return std::ceil(v); });
        case UnaryOp::round:
          return run([](C v) { return std::nearbyint(v); });  // Half to even.
        case UnaryOp::reciprocal: return run([](C v) { return C(1) / v; });
        case UnaryOp::pow_scalar: {
          const C e = C(p.a);
          return run([e](C v) { return std::pow(v, e); });
        }
        default: break;
      }
    }
  }
  throw BackendError(fmt::format("cpu: {} does not take {}", name(op),
                                 x.to_string()));
}

}  // namespace

void Backend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                    Tensor& out) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    unary_typed<decltype(tag)>(op, x, p, out);
  });
}

}  // namespace nascent::cpu
