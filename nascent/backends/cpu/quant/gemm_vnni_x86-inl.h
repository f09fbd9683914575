// AVX-512 VNNI mat-mat kernel of the quant family for q4_0, q8_0, q4_K and
// q6_K: the panels of quant/gemm_x86-inl.h (16 weight rows of u8 levels,
// four consecutive k of a row per 32-bit word: one 512-bit vector per four
// k) times a broadcast word of x's int8 levels with vpdpbusd, which
// multiplies the 64 byte pairs and adds each four into the int32 lanes in
// one instruction, where the AVX2 kernel spends about two (pmaddubsw and an
// int16 add, plus a pmaddwd per chain) on 32. On a Sapphire Rapids VM this
// ran the M = 512 products about twice as fast as the same target's
// kernels without VNNI (bench/quant_bench --no-vnni; bench/NOTES.md).
//
// Each sub-block's sum is exact in int32 (at most 32 * 255 * 127), less
// its offset (q4_0's 8, q6_K's 32, q8_0's 128: its levels are stored + 128,
// since vpdpbusd's first operand is unsigned) as the offset times x's sum
// of the sub-block's levels, so only q4_K needs f32 mins, applied after the
// tile from x's sums per group as in the AVX2 kernel.
//
// Highway's per-target header pattern: included once per SIMD target after
// quant/gemm_x86-inl.h (and quant/dot_x86-inl.h, for NASCENT_QUANT_X86).

// Compiled into the AVX-512 targets only, with VNNI enabled per function:
// Highway 1.0.3's AVX3 target does not assume VNNI, so the caller checks
// vnni_enabled() (quant/kernels.h) at run time. The attribute names
// the target's own features too: clang's replaces Highway's, and would
// drop them (then the target's always-inline helpers cannot be inlined).
#undef NASCENT_QUANT_VNNI
#if NASCENT_QUANT_X86 && HWY_TARGET <= HWY_AVX3
#define NASCENT_QUANT_VNNI 1
#else
#define NASCENT_QUANT_VNNI 0
#endif
#ifndef NASCENT_VNNI_ATTR
#define NASCENT_VNNI_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#endif

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

// c = x rows r < kRows times two panels (32 weight rows; before q4_K's
// mins), [2 panels][kRows][16]: each broadcast of x feeds two vpdpbusd.
// x rows at x + r * k (int8), their block scales at xd + r * nblocks, their
// offset terms (kOffset times the sum of a sub-block's levels) at xoff + r
// * (k / kSub). To fit two sets of sums and of block totals in the
// registers, each sub-block's int32 sum is scaled in f32 (by the panel's
// f32 x integer scale) as it ends, and x's block scale goes into c, in
// memory, once per block.
template <QuantType kType, int kRows>
NASCENT_VNNI_ATTR HWY_INLINE void TileVnni(const U8Panel* p, int64_t k,
                                           const int8_t* x, const float* xd,
                                           const int32_t* xoff, float* c) {
  using L = U8Layout<kType>;
  constexpr int64_t kSubs = L::kBlock / L::kSub, kSteps = L::kSub / 4;
  const int64_t nblocks = k / L::kBlock;
  const uint8_t* la = p[0].levels.get();
  const uint8_t* lb = p[1].levels.get();
  for (int i = 0; i < 2 * kRows; ++i) {
    _mm512_store_ps(c + 16 * i, _mm512_setzero_ps());
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    __m512 blk[kRows][2];
    for (int r = 0; r < kRows; ++r) {
      blk[r][0] = blk[r][1] = _mm512_setzero_ps();
    }
    for (int64_t s = b * kSubs; s < (b + 1) * kSubs; ++s) {
      __m512i part[kRows][2];
      for (int r = 0; r < kRows; ++r) {
        part[r][0] = part[r][1] = _mm512_setzero_si512();
      }
#pragma GCC unroll 8
      for (int64_t q = s * kSteps; q < (s + 1) * kSteps; ++q) {
        const __m512i wa = _mm512_load_si512(la + 64 * q);
        const __m512i wb = _mm512_load_si512(lb + 64 * q);
        for (int r = 0; r < kRows; ++r) {
          int32_t word;
          std::memcpy(&word, x + r * k + 4 * q, 4);
          const __m512i xb = _mm512_set1_epi32(word);
          part[r][0] = _mm512_dpbusd_epi32(part[r][0], wa, xb);
          part[r][1] = _mm512_dpbusd_epi32(part[r][1], wb, xb);
        }
      }
      const __m512 fa = _mm512_load_ps(p[0].fsc.get() + 16 * s);
      const __m512 fb = _mm512_load_ps(p[1].fsc.get() + 16 * s);
      for (int r = 0; r < kRows; ++r) {
        if constexpr (L::kOffset != 0) {
          const __m512i off = _mm512_set1_epi32(xoff[r * (k / L::kSub) + s]);
          part[r][0] = _mm512_sub_epi32(part[r][0], off);
          part[r][1] = _mm512_sub_epi32(part[r][1], off);
        }
        blk[r][0] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(part[r][0]), fa, blk[r][0]);
        blk[r][1] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(part[r][1]), fb, blk[r][1]);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      const __m512 xs = _mm512_set1_ps(xd[r * nblocks + b]);
      for (int v = 0; v < 2; ++v) {
        float* cv = c + 16 * (v * kRows + r);
        _mm512_store_ps(cv, _mm512_fmadd_ps(blk[r][v], xs, _mm512_load_ps(cv)));
      }
    }
  }
}

// TileVnni with kRows = rows, for rows in [1, kMax].
template <QuantType kType, int kMax>
NASCENT_VNNI_ATTR HWY_INLINE void TileVnniUpTo(int64_t rows, const U8Panel* p,
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
// in pairs of panels of 16, each decoded once and multiplied with every
// row of x, kMR rows at a time. (Against one panel by 8 rows with the
// integer scales applied by pmulld, this ran 10-35% faster per type, one
// thread: bench/NOTES.md, session 11.)
template <QuantType kType>
NASCENT_VNNI_ATTR void GemmRowsVnni(const uint8_t* w, int64_t ws, int64_t j0,
                                    int64_t j1, const QuantizedRows& x,
                                    float* y, int64_t ldy) {
  using L = U8Layout<kType>;
  constexpr int kMR = 6;
  const int64_t k = x.k, nblocks = k / L::kBlock, ngroups = k / L::kGroup;
  thread_local U8Panel panels[2];
  for (U8Panel& p : panels) p.reserve(k);
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
  alignas(64) float c[2 * kMR * 16];
  for (int64_t p0 = j0; p0 < j1; p0 += 32) {
    FillPanelU8<kType>(w, ws, p0, j1, k, panels[0]);
    FillPanelU8<kType>(w, ws, p0 + 16, j1, k, panels[1]);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMR) {
      const int64_t rows = std::min<int64_t>(kMR, x.rows - m0);
      const int32_t* xo =
          L::kOffset != 0 ? xoff.data() + m0 * (k / L::kSub) : nullptr;
      TileVnniUpTo<kType, kMR>(rows, panels, k, x.q8 + m0 * k,
                               x.d + m0 * nblocks, xo, c);
      for (int i = 0; i < 2; ++i) {
        float* ci = c + 16 * i * rows;  // Panel i's [rows][16].
        if constexpr (L::kOffset == 0) {
          SubtractMins16(panels[i], xg.data() + m0 * ngroups, ngroups, rows,
                         ci);
        }
        const int64_t col0 = p0 + 16 * i;
        StoreTile(ci, rows, std::min<int64_t>(16, j1 - col0),
                  y + m0 * ldy + col0, ldy);
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
