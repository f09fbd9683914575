// The reference block conversions behind quantize_row and dequantize_row
// (legacy.cpp: f32/f16/bf16 and the 32-value types; kquants.cpp:
// the k-quants). Private to nascent/quant; `blocks` counts blocks, not
// values.
#pragma once

#include <cstdint>
#include <cstring>

#include "nascent/core/dtype.h"
#include "nascent/core/quant.h"

namespace nascent::quant::detail {

// Blocks are copied in and out with memcpy: rows live at any byte offset
// (an mmap'd file), where a cast to a block pointer could be misaligned.
template <class Block>
inline Block load_block(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * int64_t(sizeof(Block)), sizeof(Block));
  return b;
}
template <class Block>
inline void store_block(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * int64_t(sizeof(Block)), &b, sizeof(Block));
}

inline float half_to_float(uint16_t bits) {
  return to_float(float16{bits});
}
inline uint16_t float_to_half(float f) {
  return to_float16(f).bits;
}

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves
// the integer in the low mantissa bits (ggml's nearest_int).
inline int nearest_int(float x) {
  const float v = x + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

void quantize_float(QuantType type, const float* src, uint8_t* dst, int64_t n);
void dequantize_float(QuantType type, const uint8_t* src, float* dst,
                      int64_t n);

void quantize_q4_0(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q4_1(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q5_0(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q5_1(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q8_0(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q2_k(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q3_k(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q4_k(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q5_k(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q6_k(const float* x, uint8_t* dst, int64_t blocks);
void quantize_q8_k(const float* x, uint8_t* dst, int64_t blocks);

void dequantize_q4_0(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q4_1(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q5_0(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q5_1(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q8_0(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q2_k(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q3_k(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q4_k(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q5_k(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q6_k(const uint8_t* src, float* y, int64_t blocks);
void dequantize_q8_k(const uint8_t* src, float* y, int64_t blocks);

}  // namespace nascent::quant::detail
