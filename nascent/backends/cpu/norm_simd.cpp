// layer_norm and rms_norm on the CPU over a contiguous [rows, cols] x.
//
// Each row is read from memory once and then stays in L1/L2 for the other
// passes: layer_norm takes the mean, then the mean of squared deviations
// (two passes, exact where E[x^2] - mean^2 cancels), then writes
// (x - mean) * rstd * weight + bias; rms_norm takes the mean square and
// writes x * rstd * weight. Sums run in f32 blocks flushed to double (see
// reduce/rows-inl.h). Rows run in parallel.
//
// mean and rstd ([rows], f32 for f32/f16/bf16 and f64 for f64) are written
// when asked; rms_norm has no mean and leaves that output untouched.
#include <algorithm>
#include <cmath>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"

// Defined once although foreach_target.h re-reads this file per target: the
// per-target kernels must share the argument type.
#ifndef NASCENT_BACKENDS_CPU_NORM_ARGS_
#define NASCENT_BACKENDS_CPU_NORM_ARGS_
namespace nascent::cpu {
struct NormArgs {
  bool rms = false;
  const void* x = nullptr;
  const void* weight = nullptr;  // May be null, as may bias.
  const void* bias = nullptr;
  void* y = nullptr;
  void* mean = nullptr;  // Compute type, may be null, as may rstd.
  void* rstd = nullptr;
  int64_t cols = 0;
  double eps = 0.0;
};

}  // namespace nascent::cpu
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/norm_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "nascent/backends/cpu/reduce/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// y = (x - shift) * scale * w + b over one row; w and b may be null.
template <class T>
void normalize_row(const T* x, const T* w, const T* b, T* y, int64_t n,
                   Compute<T> shift, Compute<T> scale) {
  using C = Compute<T>;
  if constexpr (!kSimd<T>) {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = (x[i] - shift) * scale * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
    }
  } else {
    const hn::ScalableTag<C> d;
    const int64_t N = int64_t(hn::Lanes(d));
    const auto vs = hn::Set(d, shift), vk = hn::Set(d, scale);
    const auto ones = hn::Set(d, C(1)), zeros = hn::Zero(d);
    int64_t i = 0;
    for (; i + N <= n; i += N) {
      const auto wv = w ? load(d, w + i) : ones;
      const auto bv = b ? load(d, b + i) : zeros;
      const auto t = hn::Mul(hn::Sub(load(d, x + i), vs), vk);
      store(d, hn::MulAdd(t, wv, bv), y + i);
    }
    if (i < n) {
      const size_t count = size_t(n - i);
      const auto wv = w ? load_tail(d, w + i, count, C(1)) : ones;
      const auto bv = b ? load_tail(d, b + i, count, C(0)) : zeros;
      const auto t = hn::Mul(hn::Sub(load_tail(d, x + i, count, C(0)), vs), vk);
      store_tail(d, hn::MulAdd(t, wv, bv), y + i, count);
    }
  }
}

template <class T>
void norm_rows(const NormArgs& a, int64_t begin, int64_t end) {
  using C = Compute<T>;
  const int64_t n = a.cols;
  const T* w = static_cast<const T*>(a.weight);
  const T* b = static_cast<const T*>(a.bias);
  for (int64_t r = begin; r < end; ++r) {
    const T* x = static_cast<const T*>(a.x) + r * n;
    T* y = static_cast<T*>(a.y) + r * n;
    double mean = 0.0, var;
    if (a.rms) {
      var = sum_run<SimdReduce::sum_sq_dev>(x, n, 0.0) / double(n);
    } else {
      // Shifted by x[0] so that f32 partial sums see the spread only.
      const double x0 = n > 0 ? double(to_compute(x[0])) : 0.0;
      mean = x0 + sum_run<SimdReduce::sum_dev>(x, n, x0) / double(n);
      var = sum_run<SimdReduce::sum_sq_dev>(x, n, C(mean)) / double(n);
    }
    const double rstd = 1.0 / std::sqrt(var + a.eps);
    normalize_row(x, w, b, y, n, C(mean), C(rstd));
    if (a.mean && !a.rms) static_cast<C*>(a.mean)[r] = C(mean);
    if (a.rstd) static_cast<C*>(a.rstd)[r] = C(rstd);
  }
}

void Norm(DType dtype, const NormArgs& a, int64_t begin, int64_t end) {
  switch (dtype) {
    case DType::f32:
      return norm_rows<float>(a, begin, end);
    case DType::f64:
      return norm_rows<double>(a, begin, end);
    case DType::f16:
      return norm_rows<float16>(a, begin, end);
    case DType::bf16:
      return norm_rows<bfloat16>(a, begin, end);
    default:
      return;
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(Norm);

void Backend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                   const Tensor* bias, double eps, Tensor& out, Tensor* mean,
                   Tensor* rstd) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  NormArgs a;
  a.rms = op == NormOp::rms_norm;
  a.x = byte_ptr(x);
  a.weight = weight ? byte_ptr(*weight) : nullptr;
  a.bias = bias && !a.rms ? byte_ptr(*bias) : nullptr;
  a.y = byte_ptr(out);
  a.mean = mean ? byte_ptr(*mean) : nullptr;
  a.rstd = rstd ? byte_ptr(*rstd) : nullptr;
  a.cols = cols;
  a.eps = eps;
  const DType dtype = x.dtype();
  // Three passes over a row cost about as much as an exp per element.
  const int64_t grain =
      std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(Norm)(dtype, a, b, e);
  });
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
