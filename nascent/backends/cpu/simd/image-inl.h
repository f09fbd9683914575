// Highway helpers shared by the CPU kernels that walk rows of an image
// (pooling, direct convolution). Included once per SIMD target from inside
// HWY_NAMESPACE, after hwy/highway.h, by files that use foreach_target.h.

// Per-target include guard, the Highway way.
#if defined(NASCENT_BACKENDS_CPU_IMAGE_SIMD_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_IMAGE_SIMD_INL_H_
#undef NASCENT_BACKENDS_CPU_IMAGE_SIMD_INL_H_
#else
#define NASCENT_BACKENDS_CPU_IMAGE_SIMD_INL_H_
#endif

#include <cstdint>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace simd {

namespace hn = hwy::HWY_NAMESPACE;

// The scalar target (the build's baseline, never chosen on a SIMD machine)
// has no partial vectors or lane shuffles: there, callers do the columns in
// their scalar code.
#if HWY_TARGET != HWY_SCALAR

// Whether this target has vectors of T: Highway 1.0 has no f64 lanes on
// WASM and Armv7, where f64 kernels run their scalar code.
template <class T>
inline constexpr bool kHasLanes = sizeof(T) != 8 || HWY_HAVE_FLOAT64;

// Lanes p[0], p[s], p[2 s], ... for a stride s of 1 or 2. For 2: the even
// lanes of p[0, L) below and the odd lanes of p[L - 1, 2L - 1) above, so
// that no read goes past the last lane kept (the data may end there).
template <class D, class T>
HWY_INLINE hn::Vec<D> load_strided(D d, const T* p, int64_t s) {
  if (s == 1) return hn::LoadU(d, p);
  const auto lo = hn::LoadU(d, p);
  const auto hi = hn::LoadU(d, p + hn::Lanes(d) - 1);
  return hn::ConcatUpperLower(d, hn::ConcatOdd(d, hi, hi),
                              hn::ConcatEven(d, lo, lo));
}

// Runs block(d, c) over columns from c0 in full vectors, then at most one
// half and one quarter vector, staying below c1; returns the first column
// left to scalar code. Image rows are short (14 or 28 outputs), so the
// partial vectors matter.
template <class T, class Block>
HWY_INLINE int64_t for_blocks(int64_t c0, int64_t c1, const Block& block) {
  const hn::ScalableTag<T> d;
  int64_t c = c0;
  for (; c + int64_t(hn::Lanes(d)) <= c1; c += int64_t(hn::Lanes(d))) {
    block(d, c);
  }
  const hn::Half<decltype(d)> d2;
  if constexpr (hn::MaxLanes(decltype(d2)()) >= 2) {
    if (c + int64_t(hn::Lanes(d2)) <= c1) {
      block(d2, c);
      c += int64_t(hn::Lanes(d2));
    }
    const hn::Half<decltype(d2)> d4;
    if constexpr (hn::MaxLanes(decltype(d4)()) >= 2) {
      if (c + int64_t(hn::Lanes(d4)) <= c1) {
        block(d4, c);
        c += int64_t(hn::Lanes(d4));
      }
    }
  }
  return c;
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace simd
}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_BACKENDS_CPU_IMAGE_SIMD_INL_H_
