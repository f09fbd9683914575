// Reference conversions of f32/f16/bf16 rows and of the 32-value block
// types (q4_0, q4_1, q5_0, q5_1, q8_0). The quantizers take the same steps
// in the same float order as ggml's reference ones, so they produce the
// same bits: the casts to int8_t truncate, as C's do.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "nascent/quant/blocks.h"
#include "nascent/quant/ref.h"

namespace nascent::quant::detail {

void quantize_float(QuantType type, const float* src, uint8_t* dst, int64_t n) {
  if (type == QuantType::f32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t bits = type == QuantType::f16 ? to_float16(src[i]).bits
                                                 : to_bfloat16(src[i]).bits;
    std::memcpy(dst + 2 * i, &bits, 2);
  }
}

void dequantize_float(QuantType type, const uint8_t* src, float* dst,
                      int64_t n) {
  if (type == QuantType::f32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = type == QuantType::f16 ? to_float(float16{bits})
                                    : to_float(bfloat16{bits});
  }
}

namespace {

// The value of largest magnitude, sign kept (the first one on ties).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    *min = std::min(*min, x[j]);
    *max = std::max(*max, x[j]);
  }
}

// The 5-bit quants of q5_0/q5_1: low nibbles packed as q4, bit 4 into qh.
void pack5(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = uint8_t((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
    h |= uint32_t((q[j] & 0x10) >> 4) << j;
    h |= uint32_t((q[j + kQK / 2] & 0x10) >> 4) << (j + kQK / 2);
  }
  std::memcpy(qh, &h, 4);
}

// Bit 4 of the 5-bit quant of element j (0..31).
inline int high_bit(const uint8_t* qh, int j) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return int((h >> j) & 1) << 4;
}

}  // namespace

void quantize_q4_0(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK) {
    const float d = signed_absmax(x, kQK) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int q1 = std::min(15, int(int8_t(x[j + kQK / 2] * id + 8.5f)));
      b.qs[j] = uint8_t(q0 | (q1 << 4));
    }
    store_block(b, dst, i);
  }
}

void quantize_q4_1(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK) {
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = float_to_half(d);
    b.m = float_to_half(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, int(int8_t((x[j] - min) * id + 0.5f)));
      const int q1 =
          std::min(15, int(int8_t((x[j + kQK / 2] - min) * id + 0.5f)));
      b.qs[j] = uint8_t(q0 | (q1 << 4));
    }
    store_block(b, dst, i);
  }
}

void quantize_q5_0(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK) {
    const float d = signed_absmax(x, kQK) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      q[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
    }
    BlockQ5_0 b;
    b.d = float_to_half(d);
    pack5(q, b.qs, b.qh);
    store_block(b, dst, i);
  }
}

void quantize_q5_1(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK) {
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t((x[j] - min) * id + 0.5f);
    BlockQ5_1 b;
    b.d = float_to_half(d);
    b.m = float_to_half(min);
    pack5(q, b.qs, b.qh);
    store_block(b, dst, i);
  }
}

void quantize_q8_0(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(std::round(x[j] * id));
    store_block(b, dst, i);
  }
}

void dequantize_q4_0(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = float((b.qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = float((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = half_to_float(b.d), m = half_to_float(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = float(b.qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = float(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = float(((b.qs[j] & 0xF) | high_bit(b.qh, j)) - 16) * d;
      y[j + kQK / 2] =
          float(((b.qs[j] >> 4) | high_bit(b.qh, j + kQK / 2)) - 16) * d;
    }
  }
}

void dequantize_q5_1(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = half_to_float(b.d), m = half_to_float(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = float((b.qs[j] & 0xF) | high_bit(b.qh, j)) * d + m;
      y[j + kQK / 2] =
          float((b.qs[j] >> 4) | high_bit(b.qh, j + kQK / 2)) * d + m;
    }
  }
}

void dequantize_q8_0(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = float(b.qs[j]) * d;
  }
}

}  // namespace nascent::quant::detail
