// Per-target row reductions shared by the reduce, softmax and norm kernels:
// blocked SIMD sums of x, (x - shift)^2 or exp(x - shift), and NaN-aware
// max/min of a contiguous run. Included once per target (toggling guard).
#if defined(NASCENT_BACKENDS_CPU_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NASCENT_BACKENDS_CPU_REDUCE_INL_H_
#undef NASCENT_BACKENDS_CPU_REDUCE_INL_H_
#else
#define NASCENT_BACKENDS_CPU_REDUCE_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "nascent/backends/cpu/reduce/kernels.h"
#include "nascent/backends/cpu/simd/common-inl.h"
#include "nascent/backends/cpu/simd/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// Each f32 lane adds at most this many vectors before its block's total goes
// into a double, so rounding error stays that of ~128 additions however long
// the run (and f32 adds run at full SIMD speed).
constexpr int64_t kBlockSteps = 128;

template <SimdReduce K, class D, class V>
HWY_INLINE V sum_step(D d, V acc, V v, V shift) {
  if constexpr (K == SimdReduce::sum) {
    return hn::Add(acc, v);
  } else if constexpr (K == SimdReduce::sum_dev) {
    return hn::Add(acc, hn::Sub(v, shift));
  } else if constexpr (K == SimdReduce::sum_sq_dev) {
    const V t = hn::Sub(v, shift);
    return hn::MulAdd(t, t, acc);
  } else {
    return hn::Add(acc, ExpNonPositive(d, hn::Sub(v, shift)));
  }
}

template <SimdReduce K, class C>
HWY_INLINE C scalar_step(C acc, C v, C shift) {
  if constexpr (K == SimdReduce::sum) {
    return acc + v;
  } else if constexpr (K == SimdReduce::sum_dev) {
    return acc + (v - shift);
  } else if constexpr (K == SimdReduce::sum_sq_dev) {
    return acc + (v - shift) * (v - shift);
  } else if constexpr (K == SimdReduce::sum_exp_dev) {
    return acc + std::exp(v - shift);
  } else if constexpr (K == SimdReduce::max) {
    return scalar_nan_max(acc, v);
  } else {
    return scalar_nan_min(acc, v);
  }
}

template <SimdReduce K, class C>
constexpr C identity() {
  if constexpr (K == SimdReduce::max) {
    return -std::numeric_limits<C>::infinity();
  } else if constexpr (K == SimdReduce::min) {
    return std::numeric_limits<C>::infinity();
  } else {
    return C(0);
  }
}

// One step of sum_run_simd: the four vectors at p into four accumulators.
template <SimdReduce K, class D, class V, class T>
HWY_INLINE void sum_step4(D d, V& a0, V& a1, V& a2, V& a3, const T* p,
                          V shift) {
  const int64_t N = int64_t(hn::Lanes(d));
  a0 = sum_step<K>(d, a0, load(d, p), shift);
  a1 = sum_step<K>(d, a1, load(d, p + N), shift);
  a2 = sum_step<K>(d, a2, load(d, p + 2 * N), shift);
  a3 = sum_step<K>(d, a3, load(d, p + 3 * N), shift);
}

template <class D, class V>
HWY_INLINE double block_total(D d, V a0, V a1, V a2, V a3) {
  const V a = hn::Add(hn::Add(a0, a1), hn::Add(a2, a3));
  return double(hn::GetLane(hn::SumOfLanes(d, a)));
}

// Blocks of sum_run_simd: whole steps of 4 vectors from x + i, at most
// kBlockSteps per block.
template <class D>
HWY_INLINE int64_t block_steps(D d, int64_t i, int64_t n) {
  const int64_t N = int64_t(hn::Lanes(d));
  return std::min((n - i) / (4 * N), kBlockSteps);
}

// What sum_run_simd adds after its blocks: the vectors from x + i on, then
// the scalar tail.
template <SimdReduce K, class T>
double sum_tail_simd(const T* x, int64_t i, int64_t n, double shift_d) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto shift = hn::Set(d, C(shift_d));
  auto a = hn::Zero(d);
  for (; i + N <= n; i += N) a = sum_step<K>(d, a, load(d, x + i), shift);
  C tail = 0;
  for (; i < n; ++i) tail = scalar_step<K>(tail, to_compute(x[i]), C(shift_d));
  return double(hn::GetLane(hn::SumOfLanes(d, a))) + double(tail);
}

// Sum of f(x[i]) over a contiguous run, four accumulators per block.
template <SimdReduce K, class T>
double sum_run_simd(const T* x, int64_t n, double shift_d) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto shift = hn::Set(d, C(shift_d));
  double total = 0.0;
  int64_t i = 0;
  while (i + 4 * N <= n) {
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
    const int64_t steps = block_steps(d, i, n);
    for (int64_t s = 0; s < steps; ++s, i += 4 * N) {
      sum_step4<K>(d, a0, a1, a2, a3, x + i, shift);
    }
    total += block_total(d, a0, a1, a2, a3);
  }
  return total + sum_tail_simd<K>(x, i, n, shift_d);
}

template <SimdReduce K, class T>
double sum_run(const T* x, int64_t n, double shift) {
  if constexpr (kSimd<T>) {
    return sum_run_simd<K>(x, n, shift);
  } else {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s = scalar_step<K>(s, double(x[i]), shift);
    return s;
  }
}

template <bool kMax, class V>
HWY_INLINE V extreme(V a, V b) {
  if constexpr (kMax) {
    return hn::Max(a, b);
  } else {
    return hn::Min(a, b);
  }
}

// One step of extreme_run_simd: the four vectors at p into four running
// extremes and the NaN mask.
template <bool kMax, class D, class V, class M, class T>
HWY_INLINE void extreme_step4(D d, V& m0, V& m1, V& m2, V& m3, M& nan,
                              const T* p) {
  const int64_t N = int64_t(hn::Lanes(d));
  const auto v0 = load(d, p), v1 = load(d, p + N);
  const auto v2 = load(d, p + 2 * N), v3 = load(d, p + 3 * N);
  nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)),
                           hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
  m0 = extreme<kMax>(m0, v0);
  m1 = extreme<kMax>(m1, v1);
  m2 = extreme<kMax>(m2, v2);
  m3 = extreme<kMax>(m3, v3);
}

// The end of extreme_run_simd: the vectors from x + i on, then the lanes
// and the scalar tail.
template <bool kMax, class D, class V, class M, class T>
HWY_INLINE Compute<T> extreme_finish(D d, V m0, V m1, V m2, V m3, M nan,
                                     const T* x, int64_t i, int64_t n) {
  using C = Compute<T>;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr SimdReduce K = kMax ? SimdReduce::max : SimdReduce::min;
  for (; i + N <= n; i += N) {
    const auto v = load(d, x + i);
    nan = hn::Or(nan, hn::IsNaN(v));
    m0 = extreme<kMax>(m0, v);
  }
  if (!hn::AllFalse(d, nan)) return std::numeric_limits<C>::quiet_NaN();
  const auto m = extreme<kMax>(extreme<kMax>(m0, m1), extreme<kMax>(m2, m3));
  C r = hn::GetLane(kMax ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m));
  for (; i < n; ++i) r = scalar_step<K>(r, to_compute(x[i]), C(0));
  return r;
}

// Max or min of a contiguous run of n > 0 elements; NaN if there is one.
// The hardware max drops NaN, so NaN is tracked in a mask on the side.
template <bool kMax, class T>
Compute<T> extreme_run_simd(const T* x, int64_t n) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr SimdReduce K = kMax ? SimdReduce::max : SimdReduce::min;
  auto m0 = hn::Set(d, identity<K, C>()), m1 = m0, m2 = m0, m3 = m0;
  auto nan = hn::IsNaN(m0);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    extreme_step4<kMax>(d, m0, m1, m2, m3, nan, x + i);
  }
  return extreme_finish<kMax>(d, m0, m1, m2, m3, nan, x, i, n);
}

template <bool kMax, class T>
Compute<T> extreme_run(const T* x, int64_t n) {
  if constexpr (kSimd<T>) {
    return extreme_run_simd<kMax>(x, n);
  } else {
    constexpr SimdReduce K = kMax ? SimdReduce::max : SimdReduce::min;
    Compute<T> r = identity<K, Compute<T>>();
    for (int64_t i = 0; i < n; ++i) r = scalar_step<K>(r, x[i], 0.0);
    return r;
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
