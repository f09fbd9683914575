// x86 (AVX2 and up) mat-mat kernel of the quant family for the weight types
// whose levels are small unsigned integers: q4_0 (0..15, offset 8), q4_K
// (0..15, mins) and q6_K (0..63, offset 32). A panel of 16 weight rows is
// decoded once into their u8 levels, four consecutive k of one row per
// 32-bit word, sixteen rows per 64 bytes; a broadcast word of x's int8
// levels times a panel vector (pmaddubsw) gives 8 rows x 2 pair sums in
// int16, 32 multiply-adds per instruction (twice pmaddwd's 16). The int16
// sums add up over several k steps while they cannot saturate (8 steps of
// 2 * 15 * 127, or 2 of 2 * 63 * 127), then meet the rows' integer
// sub-block scales (pmaddwd) into int32, and the rows' f32 block scales
// once per block. Offsets and mins are "mins" (value = level * scale -
// min), applied after from x's per-group sums, as in quant/gemm_simd.cpp.
// The same panels (q8_0's too, its levels moved to 0..255) feed the
// AVX-512 VNNI kernel of quant/gemm_vnni_x86-inl.h.
//
// Highway's per-target header pattern: included once per SIMD target after
// hwy/highway.h and quant/dot_x86-inl.h (which defines NASCENT_QUANT_X86).
#if defined(NASCENT_BACKENDS_CPU_QUANT_GEMM_X86_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_QUANT_GEMM_X86_INL_H_
#undef NASCENT_BACKENDS_CPU_QUANT_GEMM_X86_INL_H_
#else
#define NASCENT_BACKENDS_CPU_QUANT_GEMM_X86_INL_H_
#endif

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/quant/blocks.h"

#if NASCENT_QUANT_X86
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace x86 {

// The geometry of a type in this kernel. q8_0 only in the VNNI kernel
// (its levels + 128 would saturate pmaddubsw's pair sums).
template <QuantType kType>
struct U8Layout {
  static constexpr bool kQ6 = kType == QuantType::q6_k;
  static constexpr bool kK = kType == QuantType::q4_k || kQ6;
  static constexpr int64_t kBytes = kType == QuantType::q4_0   ? 18
                                    : kType == QuantType::q8_0 ? 34
                                    : kType == QuantType::q4_k ? 144
                                                               : 210;
  static constexpr int64_t kBlock = kK ? 256 : 32;
  static constexpr int64_t kSub = kQ6 ? 16 : 32;    // Values per int scale.
  static constexpr int64_t kGroup = kQ6 ? 16 : 32;  // Values per min.
  static constexpr int kChain = kQ6 ? 2 : 8;        // k steps summed in int16.
  // What the VNNI kernel subtracts from each level, as x's sum of the
  // sub-block's levels times it (q4_K uses mins instead).
  static constexpr int32_t kOffset = kType == QuantType::q4_0   ? 8
                                     : kType == QuantType::q8_0 ? 128
                                     : kQ6                      ? 32
                                                                : 0;
};

// One weight row's block: levels, integer sub-block scales, f32 scale and
// mins (level * isc * scale - min).
struct U8Decoded {
  alignas(32) uint8_t levels[256];
  int16_t isc[16];
  float scale;
  float mins[16];
};

template <QuantType kType>
HWY_INLINE void DecodeU8(const uint8_t* blk, U8Decoded& out) {
  uint8_t* L = out.levels;
  if constexpr (kType == QuantType::q8_0) {
    out.scale = Half(blk);
    out.isc[0] = 1;
    const __m256i q = Load(blk + 2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(L),
                       _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80))));
  } else if constexpr (kType == QuantType::q4_0) {
    out.scale = Half(blk);
    out.isc[0] = 1;
    out.mins[0] = 8.0f * out.scale;
    for (int j = 0; j < 16; ++j) {
      L[j] = blk[2 + j] & 0xF;
      L[j + 16] = blk[2 + j] >> 4;
    }
  } else if constexpr (kType == QuantType::q4_k) {
    out.scale = Half(blk);
    const float dmin = Half(blk + 2);
    for (int sb = 0; sb < 8; ++sb) {
      uint8_t sc, m;
      quant::kquant_scale_min(blk + 4, sb, &sc, &m);
      out.isc[sb] = sc;
      out.mins[sb] = dmin * float(m);
    }
    const __m256i low4 = _mm256_set1_epi8(0xF);
    for (int j = 0; j < 4; ++j) {
      const __m256i q = Load(blk + 16 + 32 * j);
      _mm256_store_si256(reinterpret_cast<__m256i*>(L + 64 * j),
                         _mm256_and_si256(q, low4));
      _mm256_store_si256(reinterpret_cast<__m256i*>(L + 64 * j + 32),
                         _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
    }
  } else {
    static_assert(kType == QuantType::q6_k);
    out.scale = Half(blk + 208);
    for (int sb = 0; sb < 16; ++sb) {
      out.isc[sb] = int8_t(blk[192 + sb]);
      out.mins[sb] = 32.0f * out.scale * float(out.isc[sb]);
    }
    const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m256i a = Load(blk + 64 * h), c = Load(blk + 64 * h + 32);
      const __m256i hv = Load(blk + 128 + 32 * h);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(a, low4),
                          _mm256_and_si256(_mm256_slli_epi16(hv, 4), bits45)),
          _mm256_or_si256(_mm256_and_si256(c, low4),
                          _mm256_and_si256(_mm256_slli_epi16(hv, 2), bits45)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4),
                          _mm256_and_si256(hv, bits45)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), low4),
                          _mm256_and_si256(_mm256_srli_epi16(hv, 2), bits45))};
      for (int r = 0; r < 4; ++r) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(L + 128 * h + 32 * r),
                           q[r]);
      }
    }
  }
}

// A panel of 16 rows: levels [k / 4][16 rows][4], integer scales
// [k / kSub][16 rows][2] (each row's scale twice, for its two int16 pair
// sums), f32 scales [blocks][16], mins [groups][16], and the products of
// the f32 and integer scales [k / kSub][16] (the VNNI kernel's).
struct U8Panel {
  hwy::AlignedFreeUniquePtr<uint8_t[]> levels;
  hwy::AlignedFreeUniquePtr<int16_t[]> isc;
  hwy::AlignedFreeUniquePtr<float[]> scales, mins;
  hwy::AlignedFreeUniquePtr<float[]> fsc;  // f32 scale x isc [k / kSub][16].
  int64_t capacity = 0;

  void reserve(int64_t k) {
    if (capacity >= k) return;
    levels = hwy::AllocateAligned<uint8_t>(size_t(16 * k));
    isc = hwy::AllocateAligned<int16_t>(size_t(2 * k));
    scales = hwy::AllocateAligned<float>(size_t(k));
    mins = hwy::AllocateAligned<float>(size_t(k));
    fsc = hwy::AllocateAligned<float>(size_t(k));
    capacity = k;
  }
};

// Decodes weight rows [p0, p0 + 16) of k values into the panel (rows from
// `end` on are zeros).
template <QuantType kType>
HWY_INLINE void FillPanelU8(const uint8_t* w, int64_t ws, int64_t p0,
                            int64_t end, int64_t k, U8Panel& panel) {
  using L = U8Layout<kType>;
  const int64_t nblocks = k / L::kBlock;
  U8Decoded dec;
  for (int64_t r = 0; r < 16; ++r) {
    const bool valid = p0 + r < end;
    const uint8_t* row = w + (p0 + r) * ws;
    for (int64_t b = 0; b < nblocks; ++b) {
      if (valid) {
        DecodeU8<kType>(row + b * L::kBytes, dec);
      } else {
        std::memset(&dec, 0, sizeof(dec));
      }
      panel.scales[size_t(16 * b + r)] = dec.scale;
      uint8_t* dst = panel.levels.get() + 4 * r;
      for (int64_t q = 0; q < L::kBlock / 4; ++q) {
        std::memcpy(dst + 64 * (b * L::kBlock / 4 + q), dec.levels + 4 * q, 4);
      }
      for (int64_t s = 0; s < L::kBlock / L::kSub; ++s) {
        const int64_t sub = b * L::kBlock / L::kSub + s;
        int16_t* sc = panel.isc.get() + 32 * sub;
        sc[2 * r] = sc[2 * r + 1] = dec.isc[s];
        panel.fsc[size_t(16 * sub + r)] = dec.scale * float(dec.isc[s]);
      }
      for (int64_t g = 0; g < L::kBlock / L::kGroup; ++g) {
        panel.mins[size_t(16 * (b * L::kBlock / L::kGroup + g) + r)] =
            dec.mins[g];
      }
    }
  }
}

// c[r][0..15] -= the panel's mins times x row r's group terms (d_x times
// its sum of levels over each group, [rows][k / kGroup]).
HWY_INLINE void SubtractMins(const U8Panel& p, const float* xg, int64_t ngroups,
                             int64_t rows, float* c) {
  for (int64_t r = 0; r < rows; ++r) {
    float* cr = c + 16 * r;
    const float* xgr = xg + r * ngroups;
    __m256 c0 = _mm256_load_ps(cr), c1 = _mm256_load_ps(cr + 8);
    for (int64_t g = 0; g < ngroups; ++g) {
      const __m256 xs = _mm256_set1_ps(xgr[g]);
      const float* mg = p.mins.get() + 16 * g;
      c0 = _mm256_fnmadd_ps(_mm256_loadu_ps(mg), xs, c0);
      c1 = _mm256_fnmadd_ps(_mm256_loadu_ps(mg + 8), xs, c1);
    }
    _mm256_store_ps(cr, c0);
    _mm256_store_ps(cr + 8, c1);
  }
}

// y[r * ldy + j] = c[16 * r + j] for r < rows, j < ncols: a tile out.
HWY_INLINE void StoreTile(const float* c, int64_t rows, int64_t ncols, float* y,
                          int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < ncols; ++j) y[r * ldy + j] = c[16 * r + j];
  }
}

// c[r][0..15] = x rows r < kRows times the panel, before mins. x rows at
// x + r * k (int8), their block scales at xd + r * (k / kBlock).
template <QuantType kType, int kRows>
HWY_INLINE void TileU8(const U8Panel& p, int64_t k, const int8_t* x,
                       const float* xd, float* c) {
  using L = U8Layout<kType>;
  const int64_t nblocks = k / L::kBlock;
  const uint8_t* levels = p.levels.get();
  const int16_t* isc = p.isc.get();
  for (int r = 0; r < kRows; ++r) {
    _mm256_store_ps(c + 16 * r, _mm256_setzero_ps());
    _mm256_store_ps(c + 16 * r + 8, _mm256_setzero_ps());
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    __m256i acc[kRows][2];
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    }
    for (int64_t s = b * L::kBlock / L::kSub; s < (b + 1) * L::kBlock / L::kSub;
         ++s) {
      const __m256i sc0 = Load(isc + 32 * s), sc1 = Load(isc + 32 * s + 16);
      for (int64_t q0 = s * L::kSub / 4; q0 < (s + 1) * L::kSub / 4;
           q0 += L::kChain) {
        __m256i t[kRows][2];
#pragma GCC unroll 8
        for (int64_t q = q0; q < q0 + L::kChain; ++q) {
          const __m256i w0 = Load(levels + 64 * q);
          const __m256i w1 = Load(levels + 64 * q + 32);
          for (int r = 0; r < kRows; ++r) {
            int32_t word;
            std::memcpy(&word, x + r * k + 4 * q, 4);
            const __m256i xb = _mm256_set1_epi32(word);
            const __m256i p0 = _mm256_maddubs_epi16(w0, xb);
            const __m256i p1 = _mm256_maddubs_epi16(w1, xb);
            if (q == q0) {
              t[r][0] = p0;
              t[r][1] = p1;
            } else {
              t[r][0] = _mm256_add_epi16(t[r][0], p0);
              t[r][1] = _mm256_add_epi16(t[r][1], p1);
            }
          }
        }
        for (int r = 0; r < kRows; ++r) {
          acc[r][0] =
              _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(t[r][0], sc0));
          acc[r][1] =
              _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(t[r][1], sc1));
        }
      }
    }
    const __m256 ws0 = _mm256_load_ps(p.scales.get() + 16 * b);
    const __m256 ws1 = _mm256_load_ps(p.scales.get() + 16 * b + 8);
    for (int r = 0; r < kRows; ++r) {
      const __m256 xs = _mm256_set1_ps(xd[r * nblocks + b]);
      float* c0 = c + 16 * r;
      _mm256_store_ps(
          c0, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][0]),
                              _mm256_mul_ps(ws0, xs), _mm256_load_ps(c0)));
      _mm256_store_ps(c0 + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][1]),
                                              _mm256_mul_ps(ws1, xs),
                                              _mm256_load_ps(c0 + 8)));
    }
  }
}

// qgemm_rows for q4_0, q4_K and q6_K on x86: weight rows [j0, j1) in
// panels of 16, each decoded once and multiplied with every row of x.
template <QuantType kType>
void GemmRowsU8(const uint8_t* w, int64_t ws, int64_t j0, int64_t j1,
                const QuantizedRows& x, float* y, int64_t ldy) {
  using L = U8Layout<kType>;
  constexpr int kMR = 4;
  const int64_t k = x.k, nblocks = k / L::kBlock, ngroups = k / L::kGroup;
  thread_local U8Panel panel;
  panel.reserve(k);
  const std::vector<float> xg = activation_group_terms(x, L::kGroup);
  alignas(32) float c[kMR * 16];
  for (int64_t p0 = j0; p0 < j1; p0 += 16) {
    FillPanelU8<kType>(w, ws, p0, j1, k, panel);
    const int64_t ncols = std::min<int64_t>(16, j1 - p0);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMR) {
      const int64_t rows = std::min<int64_t>(kMR, x.rows - m0);
      const int8_t* xq = x.q8 + m0 * k;
      const float* xd = x.d + m0 * nblocks;
      switch (rows) {
        case 4:
          TileU8<kType, 4>(panel, k, xq, xd, c);
          break;
        case 3:
          TileU8<kType, 3>(panel, k, xq, xd, c);
          break;
        case 2:
          TileU8<kType, 2>(panel, k, xq, xd, c);
          break;
        default:
          TileU8<kType, 1>(panel, k, xq, xd, c);
          break;
      }
      SubtractMins(panel, xg.data() + m0 * ngroups, ngroups, rows, c);
      StoreTile(c, rows, ncols, y + m0 * ldy + p0, ldy);
    }
  }
}

}  // namespace x86
}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_QUANT_X86
#endif  // NASCENT_BACKENDS_CPU_QUANT_GEMM_X86_INL_H_
