// x86 (AVX2 and up) panel decoding for quant/gemm_simd.cpp's int16 mat-mat
// kernel with q8_0 weights. The kernel wants pair q (levels 2q, 2q + 1 as
// int16) of the panel's 16 rows side by side; done one row and one pair at
// a time (scalar 4-byte copies) that decoding took ~12% of a TinyLlama
// prompt's q8_0 GEMM time (the FFN runs in blocks of 128 tokens, so each
// panel serves only 128 x rows). Here 8 rows of a block are widened to
// int16 (16 pairs each) and transposed as two 8 x 8 matrices of int32.
//
// Why not pmaddubsw, as quant/gemm_x86-inl.h does for q4_0 / q4_K / q6_K:
// q8_0's levels are signed 8-bit, so a pair of products (2 * 127 * 127)
// does not leave room for a second one in int16, and every pmaddubsw needs
// a pmaddwd to widen it: two multiply instructions per 32 products, as
// many as pmaddwd alone (tried: a psignb / pmaddubsw / pmaddwd tile was
// no faster, bench/NOTES.md "Session 5: Q8_0").
//
#if defined(NASCENT_BACKENDS_CPU_QUANT_GEMM_Q8_X86_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_QUANT_GEMM_Q8_X86_INL_H_
#undef NASCENT_BACKENDS_CPU_QUANT_GEMM_Q8_X86_INL_H_
#else
#define NASCENT_BACKENDS_CPU_QUANT_GEMM_Q8_X86_INL_H_
#endif

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <cstdint>

#if NASCENT_QUANT_X86
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace x86 {

// Transposes 8 rows of 8 int32 (r[i] = row i) in place: r[q] becomes
// element q of every row.
HWY_INLINE void Transpose8x8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// The int16 panel of q8_0 rows [p0, p0 + 16) (rows from `end` on are
// zeros): pairs [k / 2][16] (pair q of row r at pairs[q * 16 + r]) and
// scales [k / 32][16].
HWY_INLINE void DecodePanelQ8(const uint8_t* w, int64_t ws, int64_t p0,
                              int64_t end, int64_t nblocks, int32_t* pairs,
                              float* scales) {
  for (int64_t g = 0; g < 16; g += 8) {
    const uint8_t* rows[8];
    bool valid[8];
    for (int i = 0; i < 8; ++i) {
      valid[i] = p0 + g + i < end;
      rows[i] = w + (valid[i] ? p0 + g + i : p0) * ws;
    }
    for (int64_t b = 0; b < nblocks; ++b) {
      __m256i lo[8], hi[8];
      for (int i = 0; i < 8; ++i) {
        const uint8_t* blk = rows[i] + 34 * b;
        const __m256i q = valid[i] ? Load(blk + 2) : _mm256_setzero_si256();
        lo[i] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
        hi[i] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1));
        scales[16 * b + g + i] = valid[i] ? Half(blk) : 0.0f;
      }
      Transpose8x8(lo);
      Transpose8x8(hi);
      int32_t* dst = pairs + 16 * 16 * b + g;
      for (int q = 0; q < 8; ++q) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 16 * q), lo[q]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 16 * (q + 8)),
                           hi[q]);
      }
    }
  }
}

}  // namespace x86
}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_QUANT_X86
#endif  // NASCENT_BACKENDS_CPU_QUANT_GEMM_Q8_X86_INL_H_
