// Per-target helpers of the quant kernels (quant/dot_simd.cpp,
// quant/dot_k_simd.cpp, quant/gemm_simd.cpp): vector tags, scale loads, and the
// loop that walks weight rows in tiles against every row of x.
//
// Highway's per-target header pattern: included once per SIMD target after
// hwy/highway.h (the guard toggles with HWY_TARGET_TOGGLE).
#if defined(NASCENT_BACKENDS_CPU_QUANT_SIMD_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_QUANT_SIMD_INL_H_
#undef NASCENT_BACKENDS_CPU_QUANT_SIMD_INL_H_
#else
#define NASCENT_BACKENDS_CPU_QUANT_SIMD_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// At most 16 int16 lanes, so that a chunk of values never straddles a
// 16-value sub-block (AVX-512 runs these kernels on 256-bit vectors).
using DI16 = hn::CappedTag<int16_t, 16>;
using DI32 = hn::Repartition<int32_t, DI16>;
using DF = hn::Repartition<float, DI16>;
using DU16 = hn::RebindToUnsigned<DI16>;
using DU8 = hn::Rebind<uint8_t, DU16>;
using DI8 = hn::Rebind<int8_t, DI16>;

// The f16 at p (any alignment) as float, with the CPU's conversion (F16C
// on x86).
HWY_INLINE float HalfAt(const uint8_t* p) {
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh;
  return hn::GetLane(hn::PromoteTo(
      d1, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p))));
}

HWY_INLINE float F32At(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// Bytes at p widened to u16 lanes.
HWY_INLINE hn::Vec<DU16> LoadBytes(const uint8_t* p) {
  return hn::PromoteTo(DU16(), hn::LoadU(DU8(), p));
}

// sum0 += a * b pairwise (both int16 lanes): the integer dot product step.
HWY_INLINE hn::Vec<DI32> MulAddPairs(hn::Vec<DI16> a, const int16_t* x,
                                     hn::Vec<DI32> sum0, hn::Vec<DI32>& sum1) {
  return hn::ReorderWidenMulAccumulate(DI32(), a, hn::LoadU(DI16(), x), sum0,
                                       sum1);
}

HWY_INLINE float SumLanes(hn::Vec<DF> v) {
  return hn::GetLane(hn::SumOfLanes(DF(), v));
}

// y[i * ldy + j] = dot(j, i) for weight rows j in [j0, j1) and x rows
// i < m. Weight rows go in tiles of 16 (a few KiB, held in L1 while every
// row of x passes them), so W streams from memory once whatever m is.
template <class Dot>
HWY_INLINE void DotTiles(int64_t j0, int64_t j1, int64_t m, float* y,
                         int64_t ldy, const Dot& dot) {
  constexpr int64_t kTile = 16;
  for (int64_t t = j0; t < j1; t += kTile) {
    const int64_t end = std::min(j1, t + kTile);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = t; j < end; ++j) y[i * ldy + j] = dot(j, i);
    }
  }
}

// Columns t .. end - 1 of rows i .. i + kR - 1 of y by a kernel taking kR
// rows of x at once (DotTilesOfRows).
template <int kR, class Dot>
HWY_INLINE void DotColumns(int64_t t, int64_t end, int64_t i, float* y,
                           int64_t ldy, const Dot& dot) {
  for (int64_t j = t; j < end; ++j) {
    float out[kR];
    dot.template operator()<kR>(j, i, out);
    for (int r = 0; r < kR; ++r) y[(i + r) * ldy + j] = out[r];
  }
}

// The last m - i < kR rows of a tile (one call, of the size left).
template <int kR, class Dot>
HWY_INLINE void DotColumnsLeft(int64_t t, int64_t end, int64_t i, int64_t left,
                               float* y, int64_t ldy, const Dot& dot) {
  if constexpr (kR > 0) {
    if (left == kR) return DotColumns<kR>(t, end, i, y, ldy, dot);
    DotColumnsLeft<kR - 1>(t, end, i, left, y, ldy, dot);
  }
}

// As DotTiles, for kernels that multiply one weight row with kMaxRows rows
// of x at once (dot.template operator()<R>(j, i, out), R <= kMaxRows, puts
// W_j . x_{i + r} in out[r]), so that a batch of a few rows of x unpacks
// each weight block once per kMaxRows rows instead of once per row.
template <int kMaxRows, class Dot>
HWY_INLINE void DotTilesOfRows(int64_t j0, int64_t j1, int64_t m, float* y,
                               int64_t ldy, const Dot& dot) {
  constexpr int64_t kTile = 16;
  for (int64_t t = j0; t < j1; t += kTile) {
    const int64_t end = std::min(j1, t + kTile);
    int64_t i = 0;
    for (; i + kMaxRows <= m; i += kMaxRows) {
      DotColumns<kMaxRows>(t, end, i, y, ldy, dot);
    }
    DotColumnsLeft<kMaxRows - 1>(t, end, i, m - i, y, ldy, dot);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_BACKENDS_CPU_QUANT_SIMD_INL_H_
