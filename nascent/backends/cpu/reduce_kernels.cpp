// The Highway kernels behind reduce_kernels.h, compiled once per SIMD target
// (foreach_target.h re-includes this file); the HWY_ONCE part at the end
// picks the best target at run time.
#include "nascent/backends/cpu/reduce_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/reduce_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "nascent/backends/cpu/reduce-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// Index of the first extreme (or first NaN): a second pass over the run,
// which is still in cache, comparing a vector at a time.
template <bool kMax, class T>
int64_t arg_run(const T* x, int64_t n) {
  using C = Compute<T>;
  if constexpr (!kSimd<T>) {
    int64_t best = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return i;
      if (kMax ? x[i] > x[best] : x[i] < x[best]) best = i;
    }
    return best;
  } else {
    const hn::ScalableTag<C> d;
    const int64_t N = int64_t(hn::Lanes(d));
    const C m = extreme_run<kMax>(x, n);
    const bool want_nan = m != m;
    const auto target = hn::Set(d, m);
    int64_t i = 0;
    for (; i + N <= n; i += N) {
      const auto v = load(d, x + i);
      const auto hit = want_nan ? hn::IsNaN(v) : hn::Eq(v, target);
      if (!hn::AllFalse(d, hit)) return i + hn::FindFirstTrue(d, hit);
    }
    for (; i < n; ++i) {
      const C v = to_compute(x[i]);
      if (want_nan ? v != v : v == m) return i;
    }
    return 0;
  }
}

template <SimdReduce K, class D, class V>
HWY_INLINE V col_step(D d, V acc, V v, V shift) {
  if constexpr (K == SimdReduce::max) {
    return nan_max(acc, v);
  } else if constexpr (K == SimdReduce::min) {
    return nan_min(acc, v);
  } else {
    return sum_step<K>(d, acc, v, shift);
  }
}

// Accumulates whole rows into a tile of f32 partials in L1, four rows per
// load/store of the partials, flushing them to the double accumulators
// every kBlockSteps rows. A tile spans whole rows of up to kTile elements,
// so memory is read in long sequential runs.
template <SimdReduce K, class T>
void cols_run(const T* x, int64_t rows, int64_t row_stride, int64_t n,
              const double* shift, double* acc) {
  using C = Compute<T>;
  if constexpr (!kSimd<T>) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        acc[j] = scalar_step<K>(acc[j], x[r * row_stride + j],
                                shift ? shift[j] : 0.0);
      }
    }
    return;
  } else {
    const hn::ScalableTag<C> d;
    const int64_t N = int64_t(hn::Lanes(d));
    constexpr int64_t kTile = 2048;
    HWY_ALIGN C part[kTile];
    HWY_ALIGN C sh[kTile];
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t w = std::min(kTile, n - j0);
      const int64_t wv = w / N * N;
      for (int64_t j = 0; j < w; ++j) sh[j] = shift ? C(shift[j0 + j]) : C(0);
      for (int64_t r0 = 0; r0 < rows; r0 += kBlockSteps) {
        const int64_t r1 = std::min(rows, r0 + kBlockSteps);
        std::fill(part, part + w, identity<K, C>());
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4) {
          const T* a = x + r * row_stride + j0;
          const T* b = a + row_stride;
          const T* c = b + row_stride;
          const T* e = c + row_stride;
          for (int64_t j = 0; j < wv; j += N) {
            const auto s = hn::Load(d, sh + j);
            auto p = hn::Load(d, part + j);
            p = col_step<K>(d, p, load(d, a + j), s);
            p = col_step<K>(d, p, load(d, b + j), s);
            p = col_step<K>(d, p, load(d, c + j), s);
            p = col_step<K>(d, p, load(d, e + j), s);
            hn::Store(p, d, part + j);
          }
          for (int64_t j = wv; j < w; ++j) {
            C p = part[j];
            for (const T* row : {a, b, c, e}) {
              p = scalar_step<K>(p, to_compute(row[j]), sh[j]);
            }
            part[j] = p;
          }
        }
        for (; r < r1; ++r) {
          const T* row = x + r * row_stride + j0;
          for (int64_t j = 0; j < wv; j += N) {
            const auto p = col_step<K>(d, hn::Load(d, part + j),
                                       load(d, row + j), hn::Load(d, sh + j));
            hn::Store(p, d, part + j);
          }
          for (int64_t j = wv; j < w; ++j) {
            part[j] = scalar_step<K>(part[j], to_compute(row[j]), sh[j]);
          }
        }
        for (int64_t j = 0; j < w; ++j) {
          if constexpr (K == SimdReduce::max) {
            acc[j0 + j] = scalar_nan_max(acc[j0 + j], double(part[j]));
          } else if constexpr (K == SimdReduce::min) {
            acc[j0 + j] = scalar_nan_min(acc[j0 + j], double(part[j]));
          } else {
            acc[j0 + j] += double(part[j]);
          }
        }
      }
    }
  }
}

template <class T>
void reduce_rows_t(SimdReduce kind, const T* x, int64_t rows,
                   int64_t row_stride, int64_t n, const double* shift,
                   double* res, int64_t res_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* p = x + r * row_stride;
    const double sh = shift ? shift[r * res_stride] : 0.0;
    double& out = res[r * res_stride];
    switch (kind) {
      case SimdReduce::sum:
        out = sum_run<SimdReduce::sum>(p, n, sh);
        break;
      case SimdReduce::sum_dev:
        out = sum_run<SimdReduce::sum_dev>(p, n, sh);
        break;
      case SimdReduce::sum_sq_dev:
        out = sum_run<SimdReduce::sum_sq_dev>(p, n, sh);
        break;
      case SimdReduce::sum_exp_dev:
        out = sum_run<SimdReduce::sum_exp_dev>(p, n, sh);
        break;
      case SimdReduce::max:
        out = n > 0 ? double(extreme_run<true>(p, n))
                    : -std::numeric_limits<double>::infinity();
        break;
      case SimdReduce::min:
        out = n > 0 ? double(extreme_run<false>(p, n))
                    : std::numeric_limits<double>::infinity();
        break;
    }
  }
}

template <class T>
void reduce_cols_t(SimdReduce kind, const T* x, int64_t rows,
                   int64_t row_stride, int64_t n, const double* shift,
                   double* acc) {
  switch (kind) {
    case SimdReduce::sum:
      return cols_run<SimdReduce::sum>(x, rows, row_stride, n, shift, acc);
    case SimdReduce::sum_dev:
      return cols_run<SimdReduce::sum_dev>(x, rows, row_stride, n, shift, acc);
    case SimdReduce::sum_sq_dev:
      return cols_run<SimdReduce::sum_sq_dev>(x, rows, row_stride, n, shift,
                                              acc);
    case SimdReduce::sum_exp_dev:
      return cols_run<SimdReduce::sum_exp_dev>(x, rows, row_stride, n, shift,
                                               acc);
    case SimdReduce::max:
      return cols_run<SimdReduce::max>(x, rows, row_stride, n, shift, acc);
    case SimdReduce::min:
      return cols_run<SimdReduce::min>(x, rows, row_stride, n, shift, acc);
  }
}

template <class T>
void arg_rows_t(bool is_max, const T* x, int64_t rows, int64_t row_stride,
                int64_t n, int64_t* idx, int64_t idx_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* p = x + r * row_stride;
    idx[r * idx_stride] = is_max ? arg_run<true>(p, n) : arg_run<false>(p, n);
  }
}

// reduce.cpp only sends floating dtypes here.
void ReduceRows(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                int64_t row_stride, int64_t n, const double* shift, double* res,
                int64_t res_stride) {
  switch (dtype) {
    case DType::f32:
      return reduce_rows_t(kind, static_cast<const float*>(x), rows, row_stride,
                           n, shift, res, res_stride);
    case DType::f64:
      return reduce_rows_t(kind, static_cast<const double*>(x), rows,
                           row_stride, n, shift, res, res_stride);
    case DType::f16:
      return reduce_rows_t(kind, static_cast<const float16*>(x), rows,
                           row_stride, n, shift, res, res_stride);
    case DType::bf16:
      return reduce_rows_t(kind, static_cast<const bfloat16*>(x), rows,
                           row_stride, n, shift, res, res_stride);
    default:
      return;
  }
}

void ReduceCols(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                int64_t row_stride, int64_t n, const double* shift,
                double* acc) {
  switch (dtype) {
    case DType::f32:
      return reduce_cols_t(kind, static_cast<const float*>(x), rows, row_stride,
                           n, shift, acc);
    case DType::f64:
      return reduce_cols_t(kind, static_cast<const double*>(x), rows,
                           row_stride, n, shift, acc);
    case DType::f16:
      return reduce_cols_t(kind, static_cast<const float16*>(x), rows,
                           row_stride, n, shift, acc);
    case DType::bf16:
      return reduce_cols_t(kind, static_cast<const bfloat16*>(x), rows,
                           row_stride, n, shift, acc);
    default:
      return;
  }
}

void ArgRows(bool is_max, DType dtype, const void* x, int64_t rows,
             int64_t row_stride, int64_t n, int64_t* idx, int64_t idx_stride) {
  switch (dtype) {
    case DType::f32:
      return arg_rows_t(is_max, static_cast<const float*>(x), rows, row_stride,
                        n, idx, idx_stride);
    case DType::f64:
      return arg_rows_t(is_max, static_cast<const double*>(x), rows, row_stride,
                        n, idx, idx_stride);
    case DType::f16:
      return arg_rows_t(is_max, static_cast<const float16*>(x), rows,
                        row_stride, n, idx, idx_stride);
    case DType::bf16:
      return arg_rows_t(is_max, static_cast<const bfloat16*>(x), rows,
                        row_stride, n, idx, idx_stride);
    default:
      return;
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(ReduceRows);
HWY_EXPORT(ReduceCols);
HWY_EXPORT(ArgRows);

void reduce_rows(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                 int64_t row_stride, int64_t n, const double* shift,
                 double* res, int64_t res_stride) {
  HWY_DYNAMIC_DISPATCH(ReduceRows)
  (kind, dtype, x, rows, row_stride, n, shift, res, res_stride);
}

void reduce_cols(SimdReduce kind, DType dtype, const void* x, int64_t rows,
                 int64_t row_stride, int64_t n, const double* shift,
                 double* acc) {
  HWY_DYNAMIC_DISPATCH(ReduceCols)
  (kind, dtype, x, rows, row_stride, n, shift, acc);
}

void arg_rows(bool is_max, DType dtype, const void* x, int64_t rows,
              int64_t row_stride, int64_t n, int64_t* idx, int64_t idx_stride) {
  HWY_DYNAMIC_DISPATCH(ArgRows)
  (is_max, dtype, x, rows, row_stride, n, idx, idx_stride);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
