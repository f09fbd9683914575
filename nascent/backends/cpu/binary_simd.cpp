// SIMD contiguous runs of the binary ops and where (see simd/runs.h), compiled
// once per Highway target through foreach_target.h.
#include <cstring>

#include "nascent/backends/cpu/simd/runs.h"

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/binary_simd.cpp"
#include "hwy/foreach_target.h"  // Must come before highway.h.
#include "hwy/highway.h"
// clang-format on
#include "nascent/backends/cpu/simd/loops-inl.h"
#include "nascent/backends/cpu/simd/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

template <bool kScalarA, bool kScalarB, class T>
void BinaryStrided(BinaryOp op, const T* a, const T* b, void* out, size_t n) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  using V = hn::Vec<decltype(d)>;
  T* o = static_cast<T*>(out);
  bool* ob = static_cast<bool*>(out);
  auto arith = [&](auto f) { Map2<kScalarA, kScalarB>(d, a, b, o, n, f); };
  auto compare = [&](auto f) { Map2<kScalarA, kScalarB>(d, a, b, ob, n, f); };
  switch (op) {
    case BinaryOp::add:
      return arith([](V x, V y) { return hn::Add(x, y); });
    case BinaryOp::sub:
      return arith([](V x, V y) { return hn::Sub(x, y); });
    case BinaryOp::mul:
      return arith([](V x, V y) { return hn::Mul(x, y); });
    case BinaryOp::div:
      return arith([](V x, V y) { return hn::Div(x, y); });
    // x86 max/min return the second operand when either is NaN; NaN must
    // win, and x + y is NaN then.
    case BinaryOp::maximum:
      return arith([&](V x, V y) {
        return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::IsNaN(y)), hn::Add(x, y),
                              hn::Max(x, y));
      });
    case BinaryOp::minimum:
      return arith([&](V x, V y) {
        return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::IsNaN(y)), hn::Add(x, y),
                              hn::Min(x, y));
      });
    case BinaryOp::eq:
      return compare([](V x, V y) { return hn::Eq(x, y); });
    // Highway's Ne is an ordered compare (false for NaN); IEEE != is not.
    case BinaryOp::ne:
      return compare([](V x, V y) { return hn::Not(hn::Eq(x, y)); });
    case BinaryOp::lt:
      return compare([](V x, V y) { return hn::Lt(x, y); });
    case BinaryOp::le:
      return compare([](V x, V y) { return hn::Le(x, y); });
    case BinaryOp::gt:
      return compare([](V x, V y) { return hn::Gt(x, y); });
    case BinaryOp::ge:
      return compare([](V x, V y) { return hn::Ge(x, y); });
    case BinaryOp::pow:
#if HWY_HAVE_FLOAT64
      if constexpr (!std::is_same_v<T, double>) {
        // In f64 lanes: as many f32 lanes as an f64 vector has.
        const hn::Rebind<float, hn::ScalableTag<double>> df;
        return Map2<kScalarA, kScalarB>(
            df, a, b, o, n, [&](auto x, auto y) { return PowF32(df, x, y); });
      }
#endif
      break;
    case BinaryOp::logical_and:
    case BinaryOp::logical_or:
    case BinaryOp::logical_xor:
      break;  // No SIMD path (has_binary).
  }
}

template <class T>
void BinaryTyped(BinaryOp op, const T* a, int64_t sa, const T* b, int64_t sb,
                 void* out, size_t n) {
  if (sa == 1 && sb == 1) return BinaryStrided<false, false>(op, a, b, out, n);
  if (sa == 0 && sb == 1) return BinaryStrided<true, false>(op, a, b, out, n);
  if (sa == 1 && sb == 0) return BinaryStrided<false, true>(op, a, b, out, n);
  return BinaryStrided<true, true>(op, a, b, out, n);
}

// Highway 1.0.3 has no f64 vectors on WASM; f64 then stays scalar.
template <class T>
constexpr bool kFloat64 = std::is_same_v<T, double> && (HWY_HAVE_FLOAT64 != 0);

void BinaryRun(BinaryOp op, DType dtype, const void* a, int64_t sa,
               const void* b, int64_t sb, void* out, size_t n) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || kFloat64<T> ||
                  std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      BinaryTyped(op, static_cast<const T*>(a), sa, static_cast<const T*>(b),
                  sb, out, n);
    }
  });
}

// where on raw lanes of U (the element's size): cond bytes widen to a mask.
template <bool kScalarA, bool kScalarB, class U>
void WhereStrided(const bool* cond, const U* a, const U* b, U* out, size_t n) {
  const hn::ScalableTag<U> d;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  auto mask_of = [&](const bool* c) {
    const auto bytes = hn::LoadU(d8, reinterpret_cast<const uint8_t*>(c));
    if constexpr (sizeof(U) == 1) {
      return hn::Ne(bytes, hn::Zero(d8));
    } else if constexpr (sizeof(U) == 8) {
      // Highway 1.0.3 widens u8 at most to u32; go on to u64 in a second
      // step.
      const hn::Rebind<uint32_t, decltype(d)> d32;
      return hn::Ne(hn::PromoteTo(d, hn::PromoteTo(d32, bytes)), hn::Zero(d));
    } else {
      return hn::Ne(hn::PromoteTo(d, bytes), hn::Zero(d));
    }
  };
  const auto va = kScalarA ? hn::Set(d, *a) : hn::Zero(d);
  const auto vb = kScalarB ? hn::Set(d, *b) : hn::Zero(d);
  auto step = [&](const bool* c, const U* pa, const U* pb, U* po) {
    const auto x = kScalarA ? va : hn::LoadU(d, pa);
    const auto y = kScalarB ? vb : hn::LoadU(d, pb);
    hn::StoreU(hn::IfThenElse(mask_of(c), x, y), d, po);
  };
  auto partial = [&](size_t i, size_t count) {
    Tail<bool> tc(cond + i, count);
    Tail<U> ta(kScalarA ? a : a + i, kScalarA ? 1 : count);
    Tail<U> tb(kScalarB ? b : b + i, kScalarB ? 1 : count);
    Tail<U> res;
    step(tc.v, ta.v, tb.v, res.v);
    std::memcpy(out + i, res.v, count * sizeof(U));
  };
  size_t i = 0;
  if (n * sizeof(U) >= StreamBytes()) {  // See Map1.
    i = std::min(n, ToAlignment(d, out));
    if (i > 0) partial(0, i);
    for (; i + lanes <= n; i += lanes) {
      const auto x = kScalarA ? va : hn::LoadU(d, a + i);
      const auto y = kScalarB ? vb : hn::LoadU(d, b + i);
      hn::Stream(hn::IfThenElse(mask_of(cond + i), x, y), d, out + i);
    }
    if (i < n) partial(i, n - i);
    hwy::FlushStream();
    return;
  }
  for (; i + lanes <= n; i += lanes) {
    step(cond + i, kScalarA ? a : a + i, kScalarB ? b : b + i, out + i);
  }
  if (i < n) partial(i, n - i);
}

template <class U>
void WhereTyped(const bool* cond, const void* a, int64_t sa, const void* b,
                int64_t sb, void* out, size_t n) {
  const U* pa = static_cast<const U*>(a);
  const U* pb = static_cast<const U*>(b);
  U* po = static_cast<U*>(out);
  if (sa == 1 && sb == 1)
    return WhereStrided<false, false>(cond, pa, pb, po, n);
  if (sa == 0 && sb == 1) return WhereStrided<true, false>(cond, pa, pb, po, n);
  if (sa == 1 && sb == 0) return WhereStrided<false, true>(cond, pa, pb, po, n);
  return WhereStrided<true, true>(cond, pa, pb, po, n);
}

void WhereRun(size_t elem_size, const bool* cond, const void* a, int64_t sa,
              const void* b, int64_t sb, void* out, size_t n) {
  switch (elem_size) {
    case 1:
      return WhereTyped<uint8_t>(cond, a, sa, b, sb, out, n);
    case 2:
      return WhereTyped<uint16_t>(cond, a, sa, b, sb, out, n);
    case 4:
      return WhereTyped<uint32_t>(cond, a, sa, b, sb, out, n);
    default:
      return WhereTyped<uint64_t>(cond, a, sa, b, sb, out, n);
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu::simd {

HWY_EXPORT(BinaryRun);
HWY_EXPORT(WhereRun);

bool has_binary(BinaryOp op, DType dtype) {
  if (!is_floating(dtype) || (dtype == DType::f64 && !has_float64())) {
    return false;
  }
  switch (op) {
    case BinaryOp::pow:
      return dtype != DType::f64 && has_float64();
    case BinaryOp::logical_and:
    case BinaryOp::logical_or:
    case BinaryOp::logical_xor:
      return false;
    default:
      return true;
  }
}

void binary(BinaryOp op, DType dtype, const void* a, int64_t stride_a,
            const void* b, int64_t stride_b, void* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryRun)
  (op, dtype, a, stride_a, b, stride_b, out, size_t(n));
}

void where(size_t elem_size, const bool* cond, const void* a, int64_t stride_a,
           const void* b, int64_t stride_b, void* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(WhereRun)
  (elem_size, cond, a, stride_a, b, stride_b, out, size_t(n));
}

}  // namespace nascent::cpu::simd
#endif  // HWY_ONCE
