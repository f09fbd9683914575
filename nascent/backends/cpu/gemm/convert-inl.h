// Reads of GEMM operands in their storage type (f32, f64, f16, bf16) as the
// type the product is computed in, scalar and SIMD, and the transpose of a
// block read that way; shared by the per-target code of gemm/kernel_simd.cpp,
// gemm/xwt_simd.cpp and gemm/gemv_simd.cpp.
//
// Highway's per-target header pattern: included once per SIMD target after
// hwy/highway.h (the guard toggles with HWY_TARGET_TOGGLE).
#if defined(NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#undef NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#else
#define NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>

#include "nascent/core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

template <class T>
inline T ToCompute(T v) {
  return v;
}
inline float ToCompute(float16 v) {
  return to_float(v);
}
inline float ToCompute(bfloat16 v) {
  return to_float(v);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const hn::TFromD<D>* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const float16* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(
      d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadAs(D d, const bfloat16* p) {
  const hn::Rebind<hwy::bfloat16_t, D> db;
  return hn::PromoteTo(
      d, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
}

// Converts n elements of a contiguous run to the compute type.
template <class D, class S, class T = hn::TFromD<D>>
void ConvertRun(D d, const S* src, size_t n, T* dst) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(LoadAs(d, src + i), d, dst + i);
  for (; i < n; ++i) dst[i] = ToCompute(src[i]);
}

// Transposes an L x L block of f32, L = Lanes(d) = 4 or 8: row j of the
// block is L consecutive values at src + j * cs, and row q of the result
// is stored at out + q * nr. Interleaves within 128-bit blocks, then (for
// 8 lanes) swaps block halves: the usual unpack/shuffle transpose.
#if HWY_TARGET == HWY_SCALAR
template <class D>
constexpr bool CanTranspose(D) {
  return false;  // One lane: nothing to interleave.
}
template <class D, class S>
void TransposeBlock(D, const S*, int64_t, float*, size_t) {}
#else
template <class D>
constexpr bool CanTranspose(D d) {
  return std::is_same_v<hn::TFromD<D>, float> &&
         (hn::MaxLanes(d) == 4 || hn::MaxLanes(d) == 8);
}

template <class D, class S>
HWY_INLINE void TransposeBlock(D d, const S* src, int64_t cs, float* out,
                               size_t nr) {
  using V = hn::Vec<D>;
  const hn::Repartition<uint64_t, D> du;
  auto lo64 = [&](V a, V b) {
    return hn::BitCast(
        d, hn::InterleaveLower(du, hn::BitCast(du, a), hn::BitCast(du, b)));
  };
  auto hi64 = [&](V a, V b) {
    return hn::BitCast(
        d, hn::InterleaveUpper(du, hn::BitCast(du, a), hn::BitCast(du, b)));
  };
  const V r0 = LoadAs(d, src), r1 = LoadAs(d, src + cs);
  const V r2 = LoadAs(d, src + 2 * cs), r3 = LoadAs(d, src + 3 * cs);
  // Pairs of rows interleaved: (a0 b0 a1 b1), (a2 b2 a3 b3) per block.
  const V t0 = hn::InterleaveLower(d, r0, r1),
          t1 = hn::InterleaveUpper(d, r0, r1);
  const V t2 = hn::InterleaveLower(d, r2, r3),
          t3 = hn::InterleaveUpper(d, r2, r3);
  if constexpr (hn::MaxLanes(d) == 4) {
    hn::StoreU(lo64(t0, t2), d, out);
    hn::StoreU(hi64(t0, t2), d, out + nr);
    hn::StoreU(lo64(t1, t3), d, out + 2 * nr);
    hn::StoreU(hi64(t1, t3), d, out + 3 * nr);
  } else {
    const V r4 = LoadAs(d, src + 4 * cs), r5 = LoadAs(d, src + 5 * cs);
    const V r6 = LoadAs(d, src + 6 * cs), r7 = LoadAs(d, src + 7 * cs);
    const V t4 = hn::InterleaveLower(d, r4, r5),
            t5 = hn::InterleaveUpper(d, r4, r5);
    const V t6 = hn::InterleaveLower(d, r6, r7),
            t7 = hn::InterleaveUpper(d, r6, r7);
    // Columns q and q + 4 of rows 0-3 (u0..u3) and of rows 4-7 (u4..u7).
    const V u0 = lo64(t0, t2), u1 = hi64(t0, t2);
    const V u2 = lo64(t1, t3), u3 = hi64(t1, t3);
    const V u4 = lo64(t4, t6), u5 = hi64(t4, t6);
    const V u6 = lo64(t5, t7), u7 = hi64(t5, t7);
    hn::StoreU(hn::ConcatLowerLower(d, u4, u0), d, out);
    hn::StoreU(hn::ConcatLowerLower(d, u5, u1), d, out + nr);
    hn::StoreU(hn::ConcatLowerLower(d, u6, u2), d, out + 2 * nr);
    hn::StoreU(hn::ConcatLowerLower(d, u7, u3), d, out + 3 * nr);
    hn::StoreU(hn::ConcatUpperUpper(d, u4, u0), d, out + 4 * nr);
    hn::StoreU(hn::ConcatUpperUpper(d, u5, u1), d, out + 5 * nr);
    hn::StoreU(hn::ConcatUpperUpper(d, u6, u2), d, out + 6 * nr);
    hn::StoreU(hn::ConcatUpperUpper(d, u7, u3), d, out + 7 * nr);
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_BACKENDS_CPU_GEMM_CONVERT_INL_H_
