// Per-target SIMD helpers shared by the CPU kernels (Google Highway): load
// and store compute vectors (f32, or f64 for double) from every floating
// storage type, rounding exactly as core's scalar conversions do, and the
// NaN-propagating max/min that PyTorch's reductions have.
//
// Included once per target by files that use hwy/foreach_target.h, hence the
// toggling include guard instead of #pragma once.
#if defined(NASCENT_BACKENDS_CPU_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_SIMD_INL_H_
#undef NASCENT_BACKENDS_CPU_SIMD_INL_H_
#else
#define NASCENT_BACKENDS_CPU_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "nascent/core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// Arithmetic on f16 and bf16 happens in float; f64 stays double.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Hardware f16 conversion (F16C, NEON) rounds to nearest even like core's
// to_float16; Highway's emulation elsewhere truncates and mangles inf/NaN,
// so those targets convert element by element with core's functions.
#if HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && \
    ((HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || HWY_ARCH_ARM_A64)
inline constexpr bool kNativeF16 = true;
#else
inline constexpr bool kNativeF16 = false;
#endif

// Whether this target has vectors of Compute<T>: WASM SIMD128 and Armv7
// NEON have no f64 lanes, so kernels on double use scalar loops there.
template <class T>
inline constexpr bool kSimd = !std::is_same_v<T, double> || HWY_HAVE_FLOAT64;

template <class T>
HWY_INLINE Compute<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return to_float(v);
  } else {
    return v;
  }
}

template <class T>
HWY_INLINE T from_compute(Compute<T> v) {
  if constexpr (std::is_same_v<T, float16>) {
    return to_float16(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bfloat16(v);
  } else {
    return v;
  }
}

// Loads Lanes(d) elements of T at p (unaligned) as compute vectors.
template <class D, class T>
HWY_INLINE hn::Vec<D> load(D d, const T* p) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    // bf16 is the high half of an f32: widening is exact everywhere.
    const hn::Rebind<uint16_t, D> du16;
    const hn::Rebind<uint32_t, D> du32;
    const auto bits = hn::PromoteTo(
        du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
    return hn::BitCast(d, hn::ShiftLeft<16>(bits));
  } else if constexpr (std::is_same_v<T, float16>) {
    if constexpr (kNativeF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      return hn::PromoteTo(
          d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
    } else {
      HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
      for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = to_float(p[i]);
      return hn::Load(d, buf);
    }
  } else {
    return hn::LoadU(d, p);
  }
}

// Stores the Lanes(d) compute values of v at p as T, rounding to nearest
// even (NaN stays NaN).
template <class D, class T>
HWY_INLINE void store(D d, hn::Vec<D> v, T* p) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint16_t, D> du16;
    const auto u = hn::BitCast(du, v);
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), odd));
    const auto quiet = hn::Or(u, hn::Set(du, 0x400000u));
    const auto bits =
        hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
    const auto high = hn::BitCast(di, hn::ShiftRight<16>(bits));
    hn::StoreU(hn::DemoteTo(du16, high), du16, reinterpret_cast<uint16_t*>(p));
  } else if constexpr (std::is_same_v<T, float16>) {
    if constexpr (kNativeF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
    } else {
      HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
      hn::Store(v, d, buf);
      for (size_t i = 0; i < hn::Lanes(d); ++i) p[i] = to_float16(buf[i]);
    }
  } else {
    hn::StoreU(v, d, p);
  }
}

// Loads the first `count` (< Lanes(d)) elements at p; the other lanes hold
// `pad`. Reads nothing past p + count.
template <class D, class T>
HWY_INLINE hn::Vec<D> load_tail(D d, const T* p, size_t count,
                                hn::TFromD<D> pad) {
  HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)];
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    buf[i] = i < count ? to_compute(p[i]) : pad;
  }
  return hn::Load(d, buf);
}

// Stores the first `count` (< Lanes(d)) lanes of v at p.
template <class D, class T>
HWY_INLINE void store_tail(D d, hn::Vec<D> v, T* p, size_t count) {
  HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)];
  hn::Store(v, d, buf);
  for (size_t i = 0; i < count; ++i) p[i] = from_compute<T>(buf[i]);
}

// max/min that let a NaN in either operand win, as PyTorch's max/min do
// (the hardware instructions return one operand regardless). NaN tests use
// IsNaN: Highway's Ne is an ordered compare, false for NaN.
template <class V>
HWY_INLINE V nan_max(V acc, V v) {
  return hn::IfThenElse(hn::Or(hn::Gt(v, acc), hn::IsNaN(v)), v, acc);
}
template <class V>
HWY_INLINE V nan_min(V acc, V v) {
  return hn::IfThenElse(hn::Or(hn::Lt(v, acc), hn::IsNaN(v)), v, acc);
}
template <class C>
HWY_INLINE C scalar_nan_max(C acc, C v) {
  return v > acc || v != v ? v : acc;
}
template <class C>
HWY_INLINE C scalar_nan_min(C acc, C v) {
  return v < acc || v != v ? v : acc;
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
