// AVX-512 VNNI mat-mat kernel of the quant family for q4_0, q8_0, q4_K and
// q6_K: the panels of quant/gemm_x86-inl.h (16 weight rows of u8 levels,
// four consecutive k of a row per 32-bit word: one 512-bit vector per four
// k) times a broadcast word of x's int8 levels with vpdpbusd, which
// multiplies the 64 byte pairs and adds each four into the int32 lanes in
// one instruction, where the AVX2 kernel spends about two (pmaddubsw and an
// int16 add, plus a pmaddwd per chain) on 32. On a Sapphire Rapids VM this
// ran the M = 512 products 1.6x (q4_0, q6_K) to 2.5x (q8_0) faster than
// the same targets' kernels without VNNI (bench/quant_bench --no-vnni).
//
// Sums stay exact in int32: a 32-value sub-block at most 32 * 255 * 127,
// times the k-quants' integer sub-block scales (pmulld) per sub-block.
// Offsets (q4_0's 8, q6_K's 32, q8_0's 128: its levels are stored + 128,
// since vpdpbusd's first operand is unsigned) come off each sub-block's sum
// as the offset times x's sum of its levels, so q6_K needs no f32 mins;
// there is one conversion to f32 per block. q4_K's mins are applied after
// the tile, from x's sums per group, as in the AVX2 kernel.
//
// Compiled into the AVX-512 targets only (NASCENT_QUANT_VNNI, from
// quant/dot_x86-inl.h), and chosen when vnni_enabled().
//
// Highway's per-target header pattern: included once per SIMD target after
// quant/gemm_x86-inl.h.
#if defined(NASCENT_BACKENDS_CPU_QUANT_GEMM_VNNI_X86_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_QUANT_GEMM_VNNI_X86_INL_H_
#undef NASCENT_BACKENDS_CPU_QUANT_GEMM_VNNI_X86_INL_H_
#else
#define NASCENT_BACKENDS_CPU_QUANT_GEMM_VNNI_X86_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nascent/backends/cpu/quant/kernels.h"

#if NASCENT_QUANT_VNNI
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace x86 {

// c[r][0..15] = x rows r < kRows times the panel (before q4_K's mins).
// x rows at x + r * k (int8), their block scales at xd + r * nblocks,
// their offset terms (kOffset times the sum of a sub-block's levels) at
// xoff + r * (k / kSub).
template <QuantType kType, int kRows>
NASCENT_VNNI_ATTR HWY_INLINE void TileVnni(const U8Panel& p, int64_t k,
                                           const int8_t* x, const float* xd,
                                           const int32_t* xoff, float* c) {
  using L = U8Layout<kType>;
  constexpr int64_t kSubs = L::kBlock / L::kSub, kSteps = L::kSub / 4;
  const int64_t nblocks = k / L::kBlock;
  const uint8_t* levels = p.levels.get();
  __m512 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nblocks; ++b) {
    __m512i sum[kRows];
    for (int r = 0; r < kRows; ++r) sum[r] = _mm512_setzero_si512();
    for (int64_t s = b * kSubs; s < (b + 1) * kSubs; ++s) {
      __m512i part[kRows];
      for (int r = 0; r < kRows; ++r) part[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int64_t q = s * kSteps; q < (s + 1) * kSteps; ++q) {
        const __m512i wv = _mm512_load_si512(levels + 64 * q);
        for (int r = 0; r < kRows; ++r) {
          int32_t word;
          std::memcpy(&word, x + r * k + 4 * q, 4);
          part[r] = _mm512_dpbusd_epi32(part[r], wv, _mm512_set1_epi32(word));
        }
      }
      if constexpr (L::kOffset != 0) {
        for (int r = 0; r < kRows; ++r) {
          part[r] = _mm512_sub_epi32(
              part[r], _mm512_set1_epi32(xoff[r * (k / L::kSub) + s]));
        }
      }
      if constexpr (kSubs == 1) {
        for (int r = 0; r < kRows; ++r) sum[r] = part[r];
      } else {
        const __m512i sc = _mm512_load_si512(p.isc32.get() + 16 * s);
        for (int r = 0; r < kRows; ++r) {
          sum[r] = _mm512_add_epi32(sum[r], _mm512_mullo_epi32(part[r], sc));
        }
      }
    }
    const __m512 ws = _mm512_load_ps(p.scales.get() + 16 * b);
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm512_fmadd_ps(
          _mm512_cvtepi32_ps(sum[r]),
          _mm512_mul_ps(ws, _mm512_set1_ps(xd[r * nblocks + b])), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) _mm512_store_ps(c + 16 * r, acc[r]);
}

// TileVnni with kRows = rows, for rows in [1, kMax].
template <QuantType kType, int kMax>
NASCENT_VNNI_ATTR HWY_INLINE void TileVnniUpTo(int64_t rows, const U8Panel& p,
                                               int64_t k, const int8_t* x,
                                               const float* xd,
                                               const int32_t* xoff, float* c) {
  if constexpr (kMax > 1) {
    if (rows < kMax) {
      return TileVnniUpTo<kType, kMax - 1>(rows, p, k, x, xd, xoff, c);
    }
  }
  TileVnni<kType, kMax>(p, k, x, xd, xoff, c);
}

// c[r][0..15] -= the panel's mins times x row r's group terms, as
// gemm_x86-inl.h's SubtractMins with one 16-lane vector, in four chains:
// with one, the multiply-adds' latency made this 15% of a Q4_K_M prompt.
HWY_INLINE void SubtractMins16(const U8Panel& p, const float* xg,
                               int64_t ngroups, int64_t rows, float* c) {
  const float* mins = p.mins.get();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xgr = xg + r * ngroups;
    __m512 t[4] = {_mm512_load_ps(c + 16 * r), _mm512_setzero_ps(),
                   _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t g = 0;
    for (; g + 4 <= ngroups; g += 4) {
      for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_fnmadd_ps(_mm512_load_ps(mins + 16 * (g + i)),
                                _mm512_set1_ps(xgr[g + i]), t[i]);
      }
    }
    for (; g < ngroups; ++g) {
      t[0] = _mm512_fnmadd_ps(_mm512_load_ps(mins + 16 * g),
                              _mm512_set1_ps(xgr[g]), t[0]);
    }
    _mm512_store_ps(c + 16 * r, _mm512_add_ps(_mm512_add_ps(t[0], t[1]),
                                              _mm512_add_ps(t[2], t[3])));
  }
}

// qgemm_rows for q4_0, q8_0, q4_K and q6_K with VNNI: weight rows [j0, j1)
// in panels of 16, each decoded once and multiplied with every row of x,
// kMR rows at a time (three sets of kMR accumulators in 32 registers).
template <QuantType kType>
NASCENT_VNNI_ATTR void GemmRowsVnni(const uint8_t* w, int64_t ws, int64_t j0,
                                    int64_t j1, const QuantizedRows& x,
                                    float* y, int64_t ldy) {
  using L = U8Layout<kType>;
  constexpr int kMR = 8;
  const int64_t k = x.k, nblocks = k / L::kBlock, ngroups = k / L::kGroup;
  thread_local U8Panel panel;
  panel.reserve(k);
  std::vector<float> xg;
  std::vector<int32_t> xoff;
  if constexpr (L::kOffset == 0) {
    xg = activation_group_terms(x, L::kGroup);
  } else {
    const int16_t* sums = L::kSub == 16 ? x.sums16 : x.sums32;
    xoff.resize(size_t(x.rows * (k / L::kSub)));
    for (size_t i = 0; i < xoff.size(); ++i) {
      xoff[i] = L::kOffset * int32_t(sums[i]);
    }
  }
  alignas(64) float c[kMR * 16];
  for (int64_t p0 = j0; p0 < j1; p0 += 16) {
    FillPanelU8<kType>(w, ws, p0, j1, k, panel);
    const int64_t ncols = std::min<int64_t>(16, j1 - p0);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMR) {
      const int64_t rows = std::min<int64_t>(kMR, x.rows - m0);
      const int8_t* xq = x.q8 + m0 * k;
      const float* xd = x.d + m0 * nblocks;
      const int32_t* xo =
          L::kOffset != 0 ? xoff.data() + m0 * (k / L::kSub) : nullptr;
      TileVnniUpTo<kType, kMR>(rows, panel, k, xq, xd, xo, c);
      if constexpr (L::kOffset == 0) {
        SubtractMins16(panel, xg.data() + m0 * ngroups, ngroups, rows, c);
      }
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < ncols; ++j) {
          y[(m0 + r) * ldy + p0 + j] = c[16 * r + j];
        }
      }
    }
  }
}

}  // namespace x86
}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_QUANT_VNNI
#endif  // NASCENT_BACKENDS_CPU_QUANT_GEMM_VNNI_X86_INL_H_
