// The block layouts of the GGML quantized types, byte for byte as ggml's
// ggml-common.h defines them (little-endian; half-precision scales are raw
// f16 bits). The value of element i of a block:
//
//   q4_0  d * (q - 8)           q: 4 bits; element j < 16 is the low nibble
//                               of qs[j], element j + 16 its high nibble.
//   q4_1  d * q + m             q: 4 bits, nibbles as q4_0.
//   q5_0  d * (q - 16)          q: 4 bits as q4_0 plus bit 4 = bit i of qh
//                               (a little-endian u32).
//   q5_1  d * q + m             q: 5 bits as q5_0.
//   q8_0  d * q                 q: int8.
//
// The k-quants group 256 values in a super-block of sub-blocks, each with
// a small integer scale (and min) that a per-super-block f16 scale (and
// dmin) multiplies:
//
//   q2_K  16 x 16: d * sc * q - dmin * m, q 2 bits, scales[j] = sc | m << 4.
//   q3_K  16 x 16: d * (sc - 32) * (q - 4), sc 6 bits; q 2 bits in qs plus
//         a third bit in hmask (set means no -4).
//   q4_K  8 x 32: d * sc * q - dmin * m, sc and m 6 bits packed in 12 bytes.
//   q5_K  8 x 32: as q4_K with a fifth bit of q in qh.
//   q6_K  16 x 16: d * sc * (q - 32), sc int8; q 4 bits in ql, 2 in qh.
//   q8_K  256: d * q, d f32, with bsums[j] = sum of q over 16 values.
//
// The bit positions are spelled out where the values are decoded
// (quant/kquants.cpp and the backends' kernels).
#pragma once

#include <cstdint>

namespace nascent::quant {

inline constexpr int kQK = 32;     // Values per block of q4_0 .. q8_0.
inline constexpr int kQK_K = 256;  // Values per super-block of the k-quants.

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// The 6-bit scale and min of sub-block j (0..7) of a q4_K or q5_K block:
// bytes 0-3 hold the scales of sub-blocks 0-3 in their low 6 bits, bytes
// 4-7 the mins; sub-blocks 4-7 take their low 4 bits from the nibbles of
// bytes 8-11 (scale low, min high) and their top 2 bits from the top bits
// of bytes 0-3 (scales) and 4-7 (mins).
inline void kquant_scale_min(const uint8_t* scales, int j, uint8_t* sc,
                             uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = uint8_t((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// The 6-bit scale (0..63, 32 means 0) of sub-block j (0..15) of a q3_K
// block: low 4 bits from the nibbles of bytes 0-7 (j < 8: low nibble of
// byte j, else high nibble of byte j - 8), top 2 bits from byte 8 + j % 4
// at bit 2 * (j / 4).
inline int q3k_scale(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace nascent::quant
