// SIMD contiguous runs of the unary ops (see simd/runs.h), compiled once per
// Highway target through foreach_target.h.
#include <cstring>

#include "nascent/backends/cpu/simd/runs.h"

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/unary_simd.cpp"
#include "hwy/foreach_target.h"  // Must come before highway.h.
#include "hwy/highway.h"
// clang-format on
#include "nascent/backends/cpu/simd/loops-inl.h"
#include "nascent/backends/cpu/simd/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// pow(x, e) for the exponents with short exact forms.
template <class D, class V>
HWY_INLINE V PowShort(D d, V x, double e) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  if (e == 0) return one;  // pow(NaN, 0) is 1 too.
  if (e == 1) return x;
  if (e == 2) return hn::Mul(x, x);
  if (e == 3) return hn::Mul(hn::Mul(x, x), x);
  if (e == -1) return hn::Div(one, x);
  if (e == -2) {
    const V r = hn::Div(one, x);  // Not 1 / x^2: x^2 may overflow.
    return hn::Mul(r, r);
  }
  // pow(-0, +-0.5) is pow(+0, ...) and pow(-inf, 0.5) is +inf, unlike sqrt.
  const V s = hn::IfThenElse(hn::Eq(x, hn::Neg(hn::Inf(d))), hn::Inf(d),
                             hn::Sqrt(hn::Add(x, hn::Zero(d))));
  return e == 0.5 ? s : hn::Div(one, s);
}

template <class T>
void UnaryTyped(UnaryOp op, const T* x, T* out, size_t n,
                const UnaryParams& p) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  using V = hn::Vec<decltype(d)>;
  auto run = [&](auto f) { Map1(d, x, out, n, f); };
  const V zero = hn::Zero(d), one = hn::Set(d, C(1));
  switch (op) {
    case UnaryOp::neg:
      return run([&](V v) { return hn::Neg(v); });
    case UnaryOp::abs:
      return run([&](V v) { return hn::Abs(v); });
    case UnaryOp::sign:
      return run([&](V v) {
        const V s = hn::Sub(hn::IfThenElseZero(hn::Gt(v, zero), one),
                            hn::IfThenElseZero(hn::Lt(v, zero), one));
        return KeepNaN(d, v, s);
      });
    case UnaryOp::relu:
      // Not Max(v, 0): NaN must stay NaN.
      return run([&](V v) { return hn::IfThenZeroElse(hn::Lt(v, zero), v); });
    case UnaryOp::square:
      return run([&](V v) { return hn::Mul(v, v); });
    case UnaryOp::clamp: {
      const V lo = hn::Set(d, C(p.a)), hi = hn::Set(d, C(p.b));
      return run([&](V v) {
        return hn::IfThenElse(hn::Lt(v, lo), lo,
                              hn::IfThenElse(hn::Gt(v, hi), hi, v));
      });
    }
    // A rounded value has x's sign (-0.5 rounds to -0); Highway's emulated
    // rounding (SSSE3, EMU128) loses the sign of zero, so restore it.
    case UnaryOp::floor:
      return run([&](V v) { return hn::CopySign(hn::Floor(v), v); });
    case UnaryOp::ceil:
      return run([&](V v) { return hn::CopySign(hn::Ceil(v), v); });
    case UnaryOp::round:
      return run([&](V v) { return hn::CopySign(hn::Round(v), v); });
    case UnaryOp::reciprocal:
      return run([&](V v) { return hn::Div(one, v); });
    case UnaryOp::sqrt:
      return run([&](V v) { return hn::Sqrt(v); });
    case UnaryOp::rsqrt:
      return run([&](V v) { return hn::Div(one, hn::Sqrt(v)); });
    case UnaryOp::exp:
      return run([&](V v) { return FastExp(d, v); });
    case UnaryOp::expm1:
      return run([&](V v) { return SafeExpm1(d, v); });
    case UnaryOp::log:
      return run([&](V v) { return SafeLog(d, v); });
    case UnaryOp::log1p:
      return run([&](V v) { return SafeLog1p(d, v); });
    case UnaryOp::sin:
      return run([&](V v) { return SafeSinCos<true>(d, v); });
    case UnaryOp::cos:
      return run([&](V v) { return SafeSinCos<false>(d, v); });
    case UnaryOp::tanh:
      if constexpr (std::is_same_v<C, float>) {
        return run([&](V v) { return TanhF32(d, v); });
      } else {
        return run([&](V v) { return hn::Tanh(d, v); });
      }
    case UnaryOp::sigmoid:
      return run([&](V v) { return Sigmoid(d, v); });
    case UnaryOp::silu:
      return run([&](V v) { return Silu(d, v); });
    case UnaryOp::gelu_tanh:
      return run([&](V v) { return GeluTanh(d, v); });
    case UnaryOp::pow_scalar:
      if (simd::is_short_exponent(p.a)) {
        return run([&](V v) { return PowShort(d, v, p.a); });
      }
#if HWY_HAVE_FLOAT64
      if constexpr (std::is_same_v<C, float>) {
        // In f64 lanes, with the exponent as given (not rounded to f32).
        const hn::Rebind<float, hn::ScalableTag<double>> df;
        const hn::Rebind<double, decltype(df)> d64;
        const auto e = hn::Set(d64, p.a);
        return Map1(df, x, out, n, [&](auto v) {
          return DemoteToFloat(df, PowCore(d64, hn::PromoteTo(d64, v), e));
        });
      }
#endif
      break;
    case UnaryOp::gelu:
    case UnaryOp::erf:
      if constexpr (std::is_same_v<C, float>) {
        if (op == UnaryOp::gelu) return run([&](V v) { return Gelu(d, v); });
        return run([&](V v) { return Erf(d, v); });
      }
      break;
    case UnaryOp::logical_not:
      break;
  }
}

// Highway 1.0.3 has no f64 vectors on WASM; f64 then stays scalar.
template <class T>
constexpr bool kFloat64 = std::is_same_v<T, double> && (HWY_HAVE_FLOAT64 != 0);

bool HasFloat64() {
  return HWY_HAVE_FLOAT64 != 0;
}

void UnaryRun(UnaryOp op, DType dtype, const void* x, void* out, size_t n,
              const UnaryParams& p) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || kFloat64<T> ||
                  std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      UnaryTyped(op, static_cast<const T*>(x), static_cast<T*>(out), n, p);
    }
  });
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu::simd {

HWY_EXPORT(UnaryRun);
HWY_EXPORT(HasFloat64);

bool has_float64() {
  return HWY_DYNAMIC_DISPATCH(HasFloat64)();
}

bool has_unary(UnaryOp op, DType dtype, const UnaryParams& p) {
  const bool f32_compute =
      dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
  if (!f32_compute && !(dtype == DType::f64 && has_float64())) return false;
  switch (op) {
    case UnaryOp::logical_not:
      return false;
    case UnaryOp::gelu:
    case UnaryOp::erf:
      return f32_compute;
    case UnaryOp::pow_scalar:
      // Any exponent through f64 lanes; without those, only short forms.
      if (f32_compute && has_float64()) return true;
      return is_short_exponent(p.a);
    default:
      return true;
  }
}

void unary(UnaryOp op, DType dtype, const void* x, void* out, int64_t n,
           const UnaryParams& p) {
  HWY_DYNAMIC_DISPATCH(UnaryRun)(op, dtype, x, out, size_t(n), p);
}

}  // namespace nascent::cpu::simd
#endif  // HWY_ONCE
