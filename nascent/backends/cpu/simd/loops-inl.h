// Per-target building blocks of the SIMD element-wise kernels: loads and
// stores that convert f16/bf16 storage to f32 lanes and back, and the loops
// over a contiguous run (with a safe tail). Included by the *_simd.cpp
// files once per Highway target.

// Per-target include guard, as Highway's own -inl headers do.
#if defined(NASCENT_CPU_SIMD_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_CPU_SIMD_LOOPS_INL_H_
#undef NASCENT_CPU_SIMD_LOOPS_INL_H_
#else
#define NASCENT_CPU_SIMD_LOOPS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "nascent/core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// x86 with AVX2 or AVX-512 has F16C, whose conversions round to nearest
// even. Elsewhere Highway 1.0.3 emulates f16 by truncation, so we convert
// with integer code that matches core's to_float16() bit for bit.
#undef NASCENT_NATIVE_F16
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || \
    HWY_TARGET == HWY_AVX3_DL
#define NASCENT_NATIVE_F16 1
#else
#define NASCENT_NATIVE_F16 0
#endif

// The f32 lanes of n halves (bits in u16 lanes).
template <class DF>
HWY_INLINE hn::Vec<DF> HalfToFloat(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h) {
#if NASCENT_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::BitCast(dh, h));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::PromoteTo(du, h);
  const auto sign = hn::ShiftLeft<16>(hn::And(u, hn::Set(du, 0x8000u)));
  const auto em = hn::And(u, hn::Set(du, 0x7fffu));
  // Exponent and mantissa shifted into place are the value times 2^-112
  // (subnormal halves become f32 subnormals), so one multiply finishes.
  const auto shifted = hn::ShiftLeft<13>(em);
  const auto finite =
      hn::Mul(hn::BitCast(df, shifted), hn::Set(df, 5.192296858534828e33f));
  const auto special =
      hn::BitCast(df, hn::Or(shifted, hn::Set(du, 0x7f800000u)));
  const auto is_special =
      hn::RebindMask(df, hn::Gt(hn::BitCast(di, em), hn::Set(di, 0x7bff)));
  return hn::Or(hn::IfThenElse(is_special, special, finite),
                hn::BitCast(df, sign));
#endif
}

// Halves (u16 lanes) of f32 lanes, rounded to nearest even.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToHalf(DF df, hn::Vec<DF> v) {
  const hn::Rebind<uint16_t, DF> du16;
#if NASCENT_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::BitCast(du16, hn::DemoteTo(dh, v));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 0x8000u));
  const auto a = hn::And(u, hn::Set(du, 0x7fffffffu));
  const auto ai = hn::BitCast(di, a);
  // Normal results: rebias the exponent and round to even on bit 13.
  const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1u));
  const auto normal =
      hn::ShiftRight<13>(hn::Add(hn::Add(a, hn::Set(du, 0xc8000fffu)), odd));
  // Subnormal results: adding 0.5 makes the FPU round |v| to a multiple of
  // 2^-24, the half subnormal unit.
  const auto sub =
      hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f))),
              hn::Set(du, 0x3f000000u));
  auto r = hn::IfThenElse(
      hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 0x38800000))), sub, normal);
  r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x477fefff))),
                     hn::Set(du, 0x7c00u), r);
  r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7f800000))),
                     hn::Set(du, 0x7e00u), r);
  return hn::DemoteTo(du16, hn::BitCast(di, hn::Or(r, sign)));
#endif
}

template <class DF>
HWY_INLINE hn::Vec<DF> BFloat16ToFloat(DF df,
                                       hn::Vec<hn::Rebind<uint16_t, DF>> h) {
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, h)));
}

// Highway's DemoteTo to bf16 truncates; this rounds to nearest even and
// keeps NaN a NaN, as core's to_bfloat16().
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToBFloat16(DF df,
                                                             hn::Vec<DF> v) {
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto hi = hn::ShiftRight<16>(u);
  const auto rounded = hn::ShiftRight<16>(
      hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), hn::And(hi, hn::Set(du, 1u)))));
  const auto is_nan =
      hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7fffffffu))),
             hn::Set(di, 0x7f800000));
  const auto r = hn::IfThenElse(hn::RebindMask(du, is_nan),
                                hn::Or(hi, hn::Set(du, 0x40u)), rounded);
  (void)df;
  return hn::DemoteTo(du16, hn::BitCast(di, r));
}

// Loads and stores of storage type T as lanes of D (f32 lanes for f16 and
// bf16 storage).
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const double* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const float16* p) {
  const hn::Rebind<uint16_t, D> du16;
  return HalfToFloat(d, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const bfloat16* p) {
  const hn::Rebind<uint16_t, D> du16;
  return BFloat16ToFloat(d,
                         hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
}

template <class D>
HWY_INLINE void StoreAs(D d, hn::Vec<D> v, float* p) {
  hn::StoreU(v, d, p);
}
template <class D>
HWY_INLINE void StoreAs(D d, hn::Vec<D> v, double* p) {
  hn::StoreU(v, d, p);
}
template <class D>
HWY_INLINE void StoreAs(D d, hn::Vec<D> v, float16* p) {
  const hn::Rebind<uint16_t, D> du16;
  hn::StoreU(FloatToHalf(d, v), du16, reinterpret_cast<uint16_t*>(p));
}
template <class D>
HWY_INLINE void StoreAs(D d, hn::Vec<D> v, bfloat16* p) {
  const hn::Rebind<uint16_t, D> du16;
  hn::StoreU(FloatToBFloat16(d, v), du16, reinterpret_cast<uint16_t*>(p));
}

// One value of T as a vector of D (a broadcast scalar operand).
template <class D, class T>
HWY_INLINE hn::Vec<D> SetAs(D d, const T* p) {
  using C = hn::TFromD<D>;
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return hn::Set(d, C(to_float(*p)));
  } else {
    return hn::Set(d, C(*p));
  }
}

// Comparison results as bool bytes (0 or 1).
template <class D>
HWY_INLINE void StoreMaskAsBool(D d, hn::Mask<D> m, bool* p) {
  using C = hn::TFromD<D>;
  const hn::Rebind<uint8_t, D> du8;
  const auto ones = hn::IfThenElseZero(m, hn::Set(d, C(1)));
  if constexpr (sizeof(C) == 4) {
    const hn::RebindToSigned<D> di;
    hn::StoreU(hn::DemoteTo(du8, hn::ConvertTo(di, ones)), du8,
               reinterpret_cast<uint8_t*>(p));
  } else {
    const hn::Rebind<int32_t, D> di;
    hn::StoreU(hn::DemoteTo(du8, hn::DemoteTo(di, ones)), du8,
               reinterpret_cast<uint8_t*>(p));
  }
}

// Largest number of lanes of any vector of this target, for tail buffers.
template <class T>
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(T) < 1
                                 ? 1
                                 : HWY_MAX_BYTES / sizeof(T);

// The last partial vector goes through stack buffers: a full-width load or
// store past the end of the run could touch an unmapped page.
template <class T>
struct Tail {
  alignas(64) T v[kMaxLanes<float>];  // At least as many lanes as D has.
  Tail(const T* src, size_t n) {
    std::memset(static_cast<void*>(v), 0, sizeof(v));
    std::memcpy(static_cast<void*>(v), src, n * sizeof(T));
  }
  Tail() { std::memset(static_cast<void*>(v), 0, sizeof(v)); }
};

// Runs that write at least this many bytes use streaming stores: an output
// that large has left the caches by the time anyone reads it, and skipping
// the read-for-ownership of each line saves a third of a unary op's memory
// traffic (glibc's memcpy does the same past a similar size).
inline size_t StreamBytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("NASCENT_STREAM_MB");
    return env != nullptr ? size_t(std::atol(env)) << 20 : size_t(16) << 20;
  }();
  return bytes;
}

// Streaming stores of D's own lane type (not converted f16/bf16 or bool).
template <class D, class O>
constexpr bool kCanStream = std::is_same_v<O, hn::TFromD<D>>;

// Elements from p to the next address aligned to a whole vector.
template <class D, class T>
HWY_INLINE size_t ToAlignment(D d, const T* p) {
  const size_t bytes = hn::Lanes(d) * sizeof(T);
  const size_t mis = reinterpret_cast<uintptr_t>(p) % bytes;
  return mis == 0 ? 0 : (bytes - mis) / sizeof(T);
}

// out[i] = f(x[i]) for count < Lanes(d) elements, through stack buffers: a
// full-width load or store past the end could touch an unmapped page.
template <class D, class T, class F>
HWY_INLINE void Map1Partial(D d, const T* x, T* out, size_t count, const F& f) {
  Tail<T> in(x, count), res;
  StoreAs(d, f(LoadAs(d, in.v)), res.v);
  std::memcpy(static_cast<void*>(out), res.v, count * sizeof(T));
}

// out[i] = f(x[i]) with T in and out, computed in lanes of D. x and out may
// be the same array.
template <class D, class T, class F>
HWY_INLINE void Map1(D d, const T* x, T* out, size_t n, const F& f) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  if constexpr (kCanStream<D, T>) {
    if (n * sizeof(T) >= StreamBytes()) {
      i = std::min(n, ToAlignment(d, out));
      if (i > 0) Map1Partial(d, x, out, i, f);
      for (; i + lanes <= n; i += lanes) {
        hn::Stream(f(LoadAs(d, x + i)), d, out + i);
      }
      if (i < n) Map1Partial(d, x + i, out + i, n - i, f);
      hwy::FlushStream();  // Order the stores before the caller's signal.
      return;
    }
  }
  for (; i + lanes <= n; i += lanes) StoreAs(d, f(LoadAs(d, x + i)), out + i);
  if (i < n) Map1Partial(d, x + i, out + i, n - i, f);
}

// A conversion of a contiguous run from S to T through lanes of D.
template <class D, class S, class T>
HWY_INLINE void ConvertRun(D d, const S* src, T* dst, size_t n) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) StoreAs(d, LoadAs(d, src + i), dst + i);
  if (i == n) return;
  Tail<S> in(src + i, n - i);
  Tail<T> res;
  StoreAs(d, LoadAs(d, in.v), res.v);
  std::memcpy(static_cast<void*>(dst + i), res.v, (n - i) * sizeof(T));
}

// out[i] = f(a[i], b[i]); an operand with kScalar* set is one value used
// for every i. O is T, or bool when f returns a mask.
template <bool kScalarA, bool kScalarB, class D, class T, class O, class F>
HWY_INLINE void Map2(D d, const T* a, const T* b, O* out, size_t n,
                     const F& f) {
  const size_t lanes = hn::Lanes(d);
  const auto sa = kScalarA ? SetAs(d, a) : hn::Zero(d);
  const auto sb = kScalarB ? SetAs(d, b) : hn::Zero(d);
  auto step = [&](const T* pa, const T* pb, O* po) {
    const auto va = kScalarA ? sa : LoadAs(d, pa);
    const auto vb = kScalarB ? sb : LoadAs(d, pb);
    if constexpr (std::is_same_v<O, bool>) {
      StoreMaskAsBool(d, f(va, vb), po);
    } else {
      StoreAs(d, f(va, vb), po);
    }
  };
  // The elements [i, i + count), count < lanes, through stack buffers.
  auto partial = [&](size_t i, size_t count) {
    Tail<T> ta(kScalarA ? a : a + i, kScalarA ? 1 : count);
    Tail<T> tb(kScalarB ? b : b + i, kScalarB ? 1 : count);
    Tail<O> res;
    step(ta.v, tb.v, res.v);
    std::memcpy(static_cast<void*>(out + i), res.v, count * sizeof(O));
  };
  size_t i = 0;
  if constexpr (kCanStream<D, O>) {
    if (n * sizeof(O) >= StreamBytes()) {
      i = std::min(n, ToAlignment(d, out));
      if (i > 0) partial(0, i);
      for (; i + lanes <= n; i += lanes) {
        const auto va = kScalarA ? sa : LoadAs(d, a + i);
        const auto vb = kScalarB ? sb : LoadAs(d, b + i);
        hn::Stream(f(va, vb), d, out + i);
      }
      if (i < n) partial(i, n - i);
      hwy::FlushStream();
      return;
    }
  }
  for (; i + lanes <= n; i += lanes) {
    step(kScalarA ? a : a + i, kScalarB ? b : b + i, out + i);
  }
  if (i < n) partial(i, n - i);
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_CPU_SIMD_LOOPS_INL_H_
