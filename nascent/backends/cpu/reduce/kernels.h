// SIMD reduction kernels for f32, f64, f16 and bf16 (Highway, target chosen
// at run time), the inner loops of reduce.cpp. Results and accumulators are
// double; sums add f32 vectors in short blocks first (see the .cpp), so
// large f32 sums keep about double accuracy at f32 speed.
#pragma once

#include <cstdint>

#include "nascent/core/dtype.h"

namespace nascent::cpu {

// sum_dev, sum_sq_dev and sum_exp_dev reduce x - shift, (x - shift)^2 and
// exp(x - shift): the passes of var (shifted by one of the values, so a
// large common offset does not cost f32 accuracy) and logsumexp. max and
// min let NaN win.
enum class SimdReduce : uint8_t {
  sum,
  sum_dev,
  sum_sq_dev,
  sum_exp_dev,
  max,
  min
};

// For r < rows: res[r * res_stride] = the reduction of the n contiguous
// elements at x + r * row_stride (element units), with shift taken from
// shift[r * res_stride] (may be null for the kinds without one).
void reduce_rows(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                 int64_t row_stride, int64_t n, const double* shift,
                 double* res, int64_t res_stride);

// For j < n: acc[j] = merge(acc[j], reduction over r < rows of
// x[r * row_stride + j]); shift[j] per column. For reductions over an outer
// axis whose inner rows are contiguous.
void reduce_cols(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                 int64_t row_stride, int64_t n, const double* shift,
                 double* acc);

// For r < rows: idx[r * idx_stride] = index of the first maximum (is_max) or
// minimum of the n > 0 contiguous elements at x + r * row_stride, or of the
// first NaN if there is one.
void arg_rows(bool is_max, DType dtype, const void* x, int64_t rows,
              int64_t row_stride, int64_t n, int64_t* idx, int64_t idx_stride);

}  // namespace nascent::cpu
