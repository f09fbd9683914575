// x86 (AVX2 and up) mat-vec kernels of the quant family: the weights' levels
// as unsigned bytes times x's int8 levels with pmaddubsw (32 products per
// instruction, pairs summed into int16), then pmaddwd against the sub-block
// scales (or ones) into int32, and one f32 multiply-add per block. Highway
// 1.0.3 has no u8 x i8 multiply-add, so these use the intrinsics on the
// targets that have them (NASCENT_QUANT_X86); the others keep the portable
// int16 kernels. Unsigned levels (q4_0's 0..15, q6_K's 0..63) keep each
// pair sum below pmaddubsw's int16 saturation (2 * 63 * 127); their offsets
// (8, 32) meet x through its block sums instead.
//
// Highway's per-target header pattern: included once per SIMD target after
// hwy/highway.h.
#undef NASCENT_QUANT_X86
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define NASCENT_QUANT_X86 1
#else
#define NASCENT_QUANT_X86 0
#endif

#if defined(NASCENT_BACKENDS_CPU_QUANT_AVX2_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_QUANT_AVX2_INL_H_
#undef NASCENT_BACKENDS_CPU_QUANT_AVX2_INL_H_
#else
#define NASCENT_BACKENDS_CPU_QUANT_AVX2_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#if NASCENT_QUANT_X86
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace x86 {

HWY_INLINE float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

HWY_INLINE float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HWY_INLINE float HSum(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HWY_INLINE __m256i Load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// How far ahead of the block being read the kernels ask for weight bytes.
// The weights usually sit in a file mapping, whose pages the hardware
// prefetcher does not follow from one to the next: reading one from memory
// ran at ~6 GB/s per thread without this, ~7-9 with it (1-4 KiB ahead, the
// Q4_K_M file streamed on this VM; in-cache rates are unchanged).
constexpr int64_t kAhead = 2048;

// Asks for kLines cache lines from kAhead bytes past p.
template <int kLines>
HWY_INLINE void PrefetchAhead(const uint8_t* p) {
  for (int i = 0; i < kLines; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kAhead + 64 * i),
                 _MM_HINT_T0);
  }
}

// Unsigned bytes u times signed bytes s, summed in fours into int32 lanes.
HWY_INLINE __m256i Dot4(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Shuffles that spread int16 word `i` of each 128-bit lane over the low
// lane and word `i + 1` over the high lane (kWordPairs[i]), or word i over
// both (kWords[i]): sub-block scales to lanes. In memory, so that each is
// one pshufb operand rather than a constant built in registers.
struct WordMasks {
  alignas(32) int8_t pairs[8][32];
  alignas(32) int8_t words[8][32];
  constexpr WordMasks() : pairs(), words() {
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 32; j += 2) {
        const int lo = 2 * i, hi = j < 16 ? 2 * i : 2 * (i + 1) % 16;
        pairs[i][j] = int8_t(j < 16 ? lo : hi);
        pairs[i][j + 1] = int8_t((j < 16 ? lo : hi) + 1);
        words[i][j] = int8_t(2 * i);
        words[i][j + 1] = int8_t(2 * i + 1);
      }
    }
  }
};
inline constexpr WordMasks kMasks;

HWY_INLINE __m256i Mask(const int8_t* m) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
}

// kR consecutive rows of quantized x against one weight row: the int8
// levels of the first (row stride k), its block scales (stride nb) and one
// kind of level sums (stride ns; unused by q8_0). A batch of decoding
// sequences is a few rows of x: each weight block, loaded and unpacked once,
// meets all of them (row by row, unpacking cost kR times as much).
struct XRows {
  const int8_t* q;
  int64_t k;
  const float* d;
  int64_t nb;
  const int16_t* s;
  int64_t ns;
};

// q8_0: sign moved from w to x so that |w| is the unsigned operand.
HWY_INLINE __m256i DotQ8Block(__m256i q, __m256i abs_q, const int8_t* x) {
  return Dot4(abs_q, _mm256_sign_epi8(Load(x), q));
}

template <int kR>
HWY_INLINE void DotQ8_0(const uint8_t* w, const XRows& x, float* out) {
  __m256 acc0[kR], acc1[kR];
  for (int r = 0; r < kR; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= x.nb; b += 2) {
    const uint8_t* blk = w + 34 * b;
    PrefetchAhead<2>(blk);
    const __m256i q0 = Load(blk + 2), q1 = Load(blk + 36);
    const __m256i a0 = _mm256_sign_epi8(q0, q0), a1 = _mm256_sign_epi8(q1, q1);
    const float d0 = Half(blk), d1 = Half(blk + 34);
    for (int r = 0; r < kR; ++r) {
      const int8_t* xb = x.q + r * x.k + 32 * b;
      const float* xd = x.d + r * x.nb + b;
      const __m256i p0 = DotQ8Block(q0, a0, xb);
      const __m256i p1 = DotQ8Block(q1, a1, xb + 32);
      acc0[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0),
                                _mm256_set1_ps(d0 * xd[0]), acc0[r]);
      acc1[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1),
                                _mm256_set1_ps(d1 * xd[1]), acc1[r]);
    }
  }
  if (b < x.nb) {
    const uint8_t* blk = w + 34 * b;
    const __m256i q = Load(blk + 2), a = _mm256_sign_epi8(q, q);
    for (int r = 0; r < kR; ++r) {
      const __m256i p = DotQ8Block(q, a, x.q + r * x.k + 32 * b);
      acc0[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                                _mm256_set1_ps(Half(blk) * x.d[r * x.nb + b]),
                                acc0[r]);
    }
  }
  for (int r = 0; r < kR; ++r) out[r] = HSum(_mm256_add_ps(acc0[r], acc1[r]));
}

// q4_0: nibbles 0..15 (low ones first); the offset 8 times x's sum leaves
// the int32 sum through one lane (cheaper than a scalar f32 term per block).
HWY_INLINE __m256i Q4Levels(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw),
                          _mm256_set1_epi8(0xF));
}

HWY_INLINE __m256i DotQ4Block(__m256i q, const int8_t* x, int16_t xsum) {
  return _mm256_sub_epi32(Dot4(q, Load(x)),
                          _mm256_castsi128_si256(_mm_cvtsi32_si128(8 * xsum)));
}

// x.s: x's sums of 32 levels.
template <int kR>
HWY_INLINE void DotQ4_0(const uint8_t* w, const XRows& x, float* out) {
  __m256 acc0[kR], acc1[kR];
  for (int r = 0; r < kR; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= x.nb; b += 2) {
    const uint8_t* blk = w + 18 * b;
    PrefetchAhead<1>(blk);
    const __m256i q0 = Q4Levels(blk + 2), q1 = Q4Levels(blk + 20);
    const float d0 = Half(blk), d1 = Half(blk + 18);
    for (int r = 0; r < kR; ++r) {
      const int8_t* xb = x.q + r * x.k + 32 * b;
      const float* xd = x.d + r * x.nb + b;
      const int16_t* xs = x.s + r * x.ns + b;
      const __m256i p0 = DotQ4Block(q0, xb, xs[0]);
      const __m256i p1 = DotQ4Block(q1, xb + 32, xs[1]);
      acc0[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0),
                                _mm256_set1_ps(d0 * xd[0]), acc0[r]);
      acc1[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1),
                                _mm256_set1_ps(d1 * xd[1]), acc1[r]);
    }
  }
  if (b < x.nb) {
    const uint8_t* blk = w + 18 * b;
    const __m256i q = Q4Levels(blk + 2);
    for (int r = 0; r < kR; ++r) {
      const __m256i p =
          DotQ4Block(q, x.q + r * x.k + 32 * b, x.s[r * x.ns + b]);
      acc0[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                                _mm256_set1_ps(Half(blk) * x.d[r * x.nb + b]),
                                acc0[r]);
    }
  }
  for (int r = 0; r < kR; ++r) out[r] = HSum(_mm256_add_ps(acc0[r], acc1[r]));
}

// q4_K: per super-block, 8 scales and 8 mins of 6 bits (unpacked with
// 32-bit word operations), 4 x 32 bytes of nibbles (low nibbles are values
// 64j .. 64j + 31, high ones the next 32). The mins meet x's sums of 32
// (x.s).
template <int kR>
HWY_INLINE void DotQ4K(const uint8_t* w, const XRows& x, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc[kR];
  __m128 accm[kR];
  for (int r = 0; r < kR; ++r) {
    acc[r] = _mm256_setzero_ps();
    accm[r] = _mm_setzero_ps();
  }
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* blk = w + 144 * b;
    PrefetchAhead<3>(blk);
    uint32_t u[3];
    std::memcpy(u, blk + 4, 12);
    const uint32_t low6 = 0x3f3f3f3f, nib = 0x0f0f0f0f, low2 = 0x03030303;
    const uint32_t s_lo = u[0] & low6, m_lo = u[1] & low6;
    const uint32_t s_hi = (u[2] & nib) | (((u[0] >> 6) & low2) << 4);
    const uint32_t m_hi = ((u[2] >> 4) & nib) | (((u[1] >> 6) & low2) << 4);
    // Low lane: the 8 scales as int16; high lane: the 8 mins.
    const __m256i sm = _mm256_cvtepu8_epi16(
        _mm_set_epi32(int(m_hi), int(m_lo), int(s_hi), int(s_lo)));
    const __m128i mins16 = _mm256_extracti128_si256(sm, 1);
    const __m256i scales = _mm256_permute4x64_epi64(sm, 0x44);
    __m256i isum[kR];
    for (int r = 0; r < kR; ++r) isum[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = Load(blk + 16 + 32 * j);
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      const __m256i s0 = _mm256_shuffle_epi8(scales, Mask(kMasks.words[2 * j]));
      const __m256i s1 =
          _mm256_shuffle_epi8(scales, Mask(kMasks.words[2 * j + 1]));
      for (int r = 0; r < kR; ++r) {
        const int8_t* xb = x.q + r * x.k + 256 * b + 64 * j;
        const __m256i p0 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(lo, Load(xb)), s0);
        const __m256i p1 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(hi, Load(xb + 32)), s1);
        isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(p0, p1));
      }
    }
    const float d = Half(blk), dmin = Half(blk + 2);
    for (int r = 0; r < kR; ++r) {
      const float xd = x.d[r * x.nb + b];
      const __m128i mins = _mm_madd_epi16(
          mins16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                      x.s + r * x.ns + 8 * b)));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]),
                               _mm256_set1_ps(d * xd), acc[r]);
      accm[r] =
          _mm_fmadd_ps(_mm_cvtepi32_ps(mins), _mm_set1_ps(dmin * xd), accm[r]);
    }
  }
  for (int r = 0; r < kR; ++r) out[r] = HSum(acc[r]) - HSum(accm[r]);
}

// q6_K: per half (128 values), 64 bytes of low nibbles and 32 of high bit
// pairs give four 32-value rows of levels 0..63; each row spans two
// 16-value sub-blocks, whose int8 scales go to the two 128-bit lanes. The
// offset 32 meets x's sums of 16 (x.s) through the same scales.
template <int kR>
HWY_INLINE void DotQ6K(const uint8_t* w, const XRows& x, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0xF), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[kR];
  for (int r = 0; r < kR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* blk = w + 210 * b;
    PrefetchAhead<4>(blk);
    const __m256i sc = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192)));
    __m256i isum[kR];
    for (int r = 0; r < kR; ++r) isum[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i sch = h == 0 ? _mm256_permute4x64_epi64(sc, 0x44)
                                 : _mm256_permute4x64_epi64(sc, 0xEE);
      const uint8_t* ql = blk + 64 * h;
      const __m256i a = Load(ql), c = Load(ql + 32);
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
      for (int rr = 0; rr < 4; ++rr) {
        const __m256i s = _mm256_shuffle_epi8(sch, Mask(kMasks.pairs[2 * rr]));
        for (int r = 0; r < kR; ++r) {
          const int8_t* xh = x.q + r * x.k + 256 * b + 128 * h;
          const __m256i p = _mm256_madd_epi16(
              _mm256_maddubs_epi16(q[rr], Load(xh + 32 * rr)), s);
          isum[r] = _mm256_add_epi32(isum[r], p);
        }
      }
    }
    const float d = Half(blk + 208);
    for (int r = 0; r < kR; ++r) {
      const __m256i offset =
          _mm256_madd_epi16(sc, Load(x.s + r * x.ns + 16 * b));
      isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(offset, 5));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]),
                               _mm256_set1_ps(d * x.d[r * x.nb + b]), acc[r]);
    }
  }
  for (int r = 0; r < kR; ++r) out[r] = HSum(acc[r]);
}

}  // namespace x86
}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#endif  // NASCENT_QUANT_X86
#endif  // NASCENT_BACKENDS_CPU_QUANT_AVX2_INL_H_
