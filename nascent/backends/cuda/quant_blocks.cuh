// Reading GGML blocks on the device: little-endian fields at any byte
// offset, the k-quants' packed scales, and float steps rounded as the
// reference decoders round them (quant/legacy.cpp, quant/kquants.cpp).
// Shared by dequantize (quant.cu) and the mat-vec kernels (qmatvec.cu).
#pragma once

#include <cstdint>

#include "nascent/backends/cuda/device.cuh"

namespace nascent::cuda::blocks {

NASCENT_D uint32_t u16(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8);
}
NASCENT_D uint32_t u32(const uint8_t* p) {
  return u16(p) | (u16(p + 2) << 16);
}
NASCENT_D float f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(uint16_t(u16(p))));
}
NASCENT_D float mul(float a, float b) {
  return __fmul_rn(a, b);
}
// a * b + c and a * b - c, rounded twice as the reference computes them.
NASCENT_D float mul_add(float a, float b, float c) {
  return __fadd_rn(__fmul_rn(a, b), c);
}
NASCENT_D float mul_sub(float a, float b, float c) {
  return __fsub_rn(__fmul_rn(a, b), c);
}

// The 4-bit quant j (0..31) of a 32-value block: low nibbles first.
NASCENT_D int nibble32(const uint8_t* qs, int j) {
  return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}
// Bit 4 of the 5-bit quant j of q5_0 / q5_1 (qh a little-endian u32).
NASCENT_D int high_bit5(const uint8_t* qh, int j) {
  return int((u32(qh) >> j) & 1) << 4;
}

// quant/blocks.h's kquant_scale_min and q3k_scale, on the device.
NASCENT_D void scale_min_k4(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}
NASCENT_D int scale_q3k(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace nascent::cuda::blocks
