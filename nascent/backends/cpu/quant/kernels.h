// Kernels of the quant family (quant.cpp drives and threads them).
//
// The block types multiply in integers, as llama.cpp does: each row of x is
// quantized to int8 levels in blocks of 32 (against q4_0 .. q8_0 weights,
// ggml's q8_0) or 256 (against the k-quants, ggml's q8_K). The levels are
// kept twice: as int8 for the x86 kernels (pmaddubsw, quant/dot_x86-inl.h) and
// as int16 for the portable ones (Highway's ReorderWidenMulAccumulate, as
// Highway 1.0.3 has no u8 x i8 product). The float weight types (f32, f16,
// bf16) multiply x as it is.
#pragma once

#include <cstdint>
#include <vector>

#include "nascent/core/quant.h"
#include "nascent/quant/codec.h"

namespace nascent::cpu {

// x rows quantized for the integer kernels.
struct QuantizedRows {
  int64_t rows = 0, k = 0;
  int64_t block = 0;                // Values per scale: 32 or 256.
  const int16_t* q = nullptr;       // [rows, k] levels in [-127, 127].
  const float* d = nullptr;         // [rows, k / block] scales.
  const int32_t* sums = nullptr;    // [rows, k / 16] sums of 16 levels.
  const int16_t* sums32 = nullptr;  // [rows, k / 32] sums of 32 levels.
  const int8_t* q8 = nullptr;       // The levels as int8.
  const int16_t* sums16 = nullptr;  // The sums of 16 levels as int16.
};

// The activation block for weights of `type`; 0 for f32, f16 and bf16
// (float kernels, x not quantized).
int64_t activation_block(QuantType type);

// Quantizes rows [r0, r1) of x [rows, k] (row stride k) in blocks of
// `block` into the arrays of out (laid out as QuantizedRows says).
void quantize_activations(const float* x, int64_t k, int64_t block, int64_t r0,
                          int64_t r1, int16_t* q, float* d, int32_t* sums,
                          int16_t* sums32, int8_t* q8, int16_t* sums16);

// x's side of the mat-mat kernels' offsets and mins: d_x times x's sum of
// levels over each group of `group` values (16 or 32; 0 gives nothing),
// [rows, k / group].
std::vector<float> activation_group_terms(const QuantizedRows& x,
                                          int64_t group);

// y[i * ldy + j] = x_i . W_j for every row i of x and weight rows j in
// [j0, j1), W_j = the row of blocks at w + j * ws bytes. Single-threaded.
void qdot_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const QuantizedRows& x, float* y, int64_t ldy);
// The halves of qdot_rows: 32-value types (quant/dot_simd.cpp) and k-quants
// (quant/dot_k_simd.cpp).
void qdot_rows32(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                 int64_t j1, const QuantizedRows& x, float* y, int64_t ldy);
void qdot_rows_k(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                 int64_t j1, const QuantizedRows& x, float* y, int64_t ldy);
// The same for many rows of x (quant/gemm_simd.cpp): weight rows decoded once
// into int16 panels, then multiplied with every row of x.
void qgemm_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                int64_t j1, const QuantizedRows& x, float* y, int64_t ldy);
// The same for float weights (f32, f16, bf16) and x f32 [m, k].
void fdot_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const float* x, int64_t m, int64_t k, float* y,
               int64_t ldy);

// Whether the AVX-512 kernels may use VNNI (vpdpbusd): the CPU has it and
// no test has turned it off. set_vnni_for_test(false) makes a VNNI machine
// run the kernels a machine without it runs, so that tests check both.
bool vnni_enabled();
void set_vnni_for_test(bool enabled);

// Decodes `rows` rows of blocks (row stride ws bytes) into f32 [rows, k].
void dequantize_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t rows,
                     int64_t k, float* out);

}  // namespace nascent::cpu
