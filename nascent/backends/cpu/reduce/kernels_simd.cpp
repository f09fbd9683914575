// The Highway kernels behind reduce/kernels.h, compiled once per SIMD target
// (foreach_target.h re-includes this file); the HWY_ONCE part at the end
// picks the best target at run time.
#include "nascent/backends/cpu/reduce/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/reduce/kernels_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "nascent/backends/cpu/reduce/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// Index of the first element equal to m (of the first NaN if m is NaN) in
// a run that holds one: a second pass over the run, which is still in
// cache, comparing a vector at a time.
template <class T>
int64_t find_run(const T* x, int64_t n, Compute<T> m) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const bool want_nan = m != m;
  const auto target = hn::Set(d, m);
  auto is_hit = [&](decltype(target) v) {
    return want_nan ? hn::IsNaN(v) : hn::Eq(v, target);
  };
  int64_t i = 0;
  // Four vectors per test and branch; the vector loop below finds the lane.
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto h = hn::Or(
        hn::Or(is_hit(load(d, x + i)), is_hit(load(d, x + i + N))),
        hn::Or(is_hit(load(d, x + i + 2 * N)), is_hit(load(d, x + i + 3 * N))));
    if (!hn::AllFalse(d, h)) break;
  }
  for (; i + N <= n; i += N) {
    const auto hit = is_hit(load(d, x + i));
    if (!hn::AllFalse(d, hit)) return i + hn::FindFirstTrue(d, hit);
  }
  for (; i < n; ++i) {
    const C v = to_compute(x[i]);
    if (want_nan ? v != v : v == m) return i;
  }
  return 0;
}

// Index of the first extreme (or first NaN) of a run of n > 0 elements.
template <bool kMax, class T>
int64_t arg_run(const T* x, int64_t n) {
  if constexpr (!kSimd<T>) {
    int64_t best = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return i;
      if (kMax ? x[i] > x[best] : x[i] < x[best]) best = i;
    }
    return best;
  } else {
    return find_run(x, n, extreme_run<kMax>(x, n));
  }
}

// Four runs of n elements at once, each with the same arithmetic as
// sum_run_simd (so results do not depend on which rows share a call). One core
// keeps more reads in flight on four streams that lie far apart than on one: a
// plain sum read 0.65-0.70x of a copy's bandwidth on one thread here, four
// streams 64-256 KiB apart 0.80-0.95x.
template <SimdReduce K, class T>
void sum_runs4(const T* const* x, int64_t n, const double* shift_d,
               double* out) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto s0 = hn::Set(d, C(shift_d[0])), s1 = hn::Set(d, C(shift_d[1]));
  const auto s2 = hn::Set(d, C(shift_d[2])), s3 = hn::Set(d, C(shift_d[3]));
  double t[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  while (i + 4 * N <= n) {
    auto a00 = hn::Zero(d), a01 = a00, a02 = a00, a03 = a00;
    auto a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    auto a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    auto a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    const int64_t steps = block_steps(d, i, n);
    for (int64_t s = 0; s < steps; ++s, i += 4 * N) {
      sum_step4<K>(d, a00, a01, a02, a03, x[0] + i, s0);
      sum_step4<K>(d, a10, a11, a12, a13, x[1] + i, s1);
      sum_step4<K>(d, a20, a21, a22, a23, x[2] + i, s2);
      sum_step4<K>(d, a30, a31, a32, a33, x[3] + i, s3);
    }
    t[0] += block_total(d, a00, a01, a02, a03);
    t[1] += block_total(d, a10, a11, a12, a13);
    t[2] += block_total(d, a20, a21, a22, a23);
    t[3] += block_total(d, a30, a31, a32, a33);
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = t[k] + sum_tail_simd<K>(x[k], i, n, shift_d[k]);
  }
}

// NaN hints: Max and Min drop NaN on some targets (x86), and an exact
// NaN-aware step costs a compare and an Or per vector, which on one core
// measured 0.89x of a copy's bandwidth against 0.94x for this hint and
// 1.0x for no NaN check at all (bench/NOTES.md, session 7). The hint is a
// running sum of the vectors read: NaN if they held a NaN, and otherwise
// only if they held (or overflowed to) both infinities. A kernel that
// sees a NaN hint redoes its run with the exact NaN-aware loop.
template <class D, class V>
HWY_INLINE V nan_hint(D, V t, V v0, V v1, V v2, V v3) {
  return hn::Add(t, hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)));
}

template <class D, class V>
HWY_INLINE bool hint_clear(D d, V t) {
  return hn::AllFalse(d, hn::IsNaN(t));
}

// The extremes are exact, so their order is free: two running extremes
// per stream keep the 12 live vectors within AVX2's 16 registers (four per
// stream spilled).
template <bool kMax, class D, class V, class T>
HWY_INLINE void extreme_step2(D d, V& ma, V& mb, V& hint, const T* p) {
  const int64_t N = int64_t(hn::Lanes(d));
  const auto v0 = load(d, p), v1 = load(d, p + N);
  const auto v2 = load(d, p + 2 * N), v3 = load(d, p + 3 * N);
  hint = nan_hint(d, hint, v0, v1, v2, v3);
  ma = extreme<kMax>(ma, extreme<kMax>(v0, v1));
  mb = extreme<kMax>(mb, extreme<kMax>(v2, v3));
}

template <bool kMax, class T>
void extreme_runs4(const T* const* x, int64_t n, Compute<T>* out) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr SimdReduce K = kMax ? SimdReduce::max : SimdReduce::min;
  auto a0 = hn::Set(d, identity<K, C>()), b0 = a0, a1 = a0, b1 = a0;
  auto a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  auto h0 = hn::Zero(d), h1 = h0, h2 = h0, h3 = h0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    extreme_step2<kMax>(d, a0, b0, h0, x[0] + i);
    extreme_step2<kMax>(d, a1, b1, h1, x[1] + i);
    extreme_step2<kMax>(d, a2, b2, h2, x[2] + i);
    extreme_step2<kMax>(d, a3, b3, h3, x[3] + i);
  }
  const auto none = hn::IsNaN(hn::Zero(d));  // No NaN in whole steps.
  auto finish = [&](int k, decltype(a0) a, decltype(a0) b, decltype(a0) h) {
    out[k] = hint_clear(d, h)
                 ? extreme_finish<kMax>(d, a, b, a, b, none, x[k], i, n)
                 : extreme_run<kMax>(x[k], n);
  };
  finish(0, a0, b0, h0);
  finish(1, a1, b1, h1);
  finish(2, a2, b2, h2);
  finish(3, a3, b3, h3);
}

// One stream of arg_runs4: the extreme of the step's four vectors into the
// running extreme m, and into s the step number where a lane rose.
template <bool kMax, class D, class DI, class V, class VI, class T>
HWY_INLINE void arg_step(D d, DI di, V& m, VI& s, V& hint, VI step,
                         const T* p) {
  const int64_t N = int64_t(hn::Lanes(d));
  const auto v0 = load(d, p), v1 = load(d, p + N);
  const auto v2 = load(d, p + 2 * N), v3 = load(d, p + 3 * N);
  hint = nan_hint(d, hint, v0, v1, v2, v3);
  const auto c = extreme<kMax>(extreme<kMax>(v0, v1), extreme<kMax>(v2, v3));
  const auto rose = kMax ? hn::Gt(c, m) : hn::Lt(c, m);
  m = hn::IfThenElse(rose, c, m);
  s = hn::IfThenElse(hn::RebindMask(di, rose), step, s);
}

// The index arg_runs4 gives one run from its stream's state after the
// whole steps (i elements): the least step where a lane holding the
// extreme rose is the first step holding it, and the least index in that
// step holding the extreme is the answer; the elements past i are compared
// one by one. In vectors, without branches on the data: a scalar version
// (lane loops, then a search of the step with early exits) made argmax of
// rows of 1024 f32 in cache 10-20% slower (bench/NOTES.md, session 7).
template <bool kMax, class D, class DI, class V, class VI, class T>
HWY_INLINE int64_t arg_finish(D d, DI di, V m, VI s, const T* x, int64_t i,
                              int64_t n) {
  using C = Compute<T>;
  using I = hn::TFromD<DI>;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t best = -1;
  C best_v = 0;
  if (i > 0) {
    const auto e = kMax ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m);
    const auto none = hn::Set(di, std::numeric_limits<I>::max());
    const auto held = hn::RebindMask(di, hn::Eq(m, e));
    const int64_t first =
        hn::GetLane(hn::MinOfLanes(di, hn::IfThenElse(held, s, none)));
    const T* p = x + first * 4 * N;
    // Lane by lane the first of the step's vectors holding e, as an index
    // in the step; then the least over the lanes.
    const auto iota = hn::Iota(di, 0);
    auto at = none;
    for (int64_t k = 3; k >= 0; --k) {
      const auto hit = hn::RebindMask(di, hn::Eq(load(d, p + k * N), e));
      at = hn::IfThenElse(hit, hn::Add(iota, hn::Set(di, I(k * N))), at);
    }
    best = first * 4 * N + int64_t(hn::GetLane(hn::MinOfLanes(di, at)));
    best_v = hn::GetLane(e);
  }
  for (int64_t j = i; j < n; ++j) {
    const C v = to_compute(x[j]);
    if (v != v) return j;  // The whole steps held no NaN.
    if (best < 0 || (kMax ? v > best_v : v < best_v)) {
      best = j;
      best_v = v;
    }
  }
  return best;
}

// Index of the first extreme (or first NaN) of four runs of n elements,
// read in one pass as four streams (see sum_runs4), instead of a pass for
// the extreme and a second one to find it. NaN in any run (rare) falls
// back to those two passes for the four (so does a false NaN hint).
template <bool kMax, class T>
void arg_runs4(const T* const* x, int64_t n, int64_t* out) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr SimdReduce K = kMax ? SimdReduce::max : SimdReduce::min;
  auto m0 = hn::Set(d, identity<K, C>()), m1 = m0, m2 = m0, m3 = m0;
  auto s0 = hn::Zero(di), s1 = s0, s2 = s0, s3 = s0, step = s0;
  auto hint = hn::Zero(d);
  const auto one = hn::Set(di, 1);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    arg_step<kMax>(d, di, m0, s0, hint, step, x[0] + i);
    arg_step<kMax>(d, di, m1, s1, hint, step, x[1] + i);
    arg_step<kMax>(d, di, m2, s2, hint, step, x[2] + i);
    arg_step<kMax>(d, di, m3, s3, hint, step, x[3] + i);
    step = hn::Add(step, one);
  }
  if (!hint_clear(d, hint)) {
    for (int k = 0; k < 4; ++k) out[k] = arg_run<kMax>(x[k], n);
    return;
  }
  out[0] = arg_finish<kMax>(d, di, m0, s0, x[0], i, n);
  out[1] = arg_finish<kMax>(d, di, m1, s1, x[1], i, n);
  out[2] = arg_finish<kMax>(d, di, m2, s2, x[2], i, n);
  out[3] = arg_finish<kMax>(d, di, m3, s3, x[3], i, n);
}

// Rows walked as four streams: stream k takes rows [k * g, (k + 1) * g) of
// a group of 4g, with g rows spanning about kStreamGap elements, so the
// streams lie far enough apart to be fetched independently. fn(ptrs, rows)
// gets the four row pointers and their row numbers.
constexpr int64_t kStreamGap = 16384;
constexpr int64_t kMinStreamRun = 256;  // Shorter rows: one stream.

template <class T, class Fn>
int64_t for_rows4(const T* x, int64_t rows, int64_t row_stride, int64_t n,
                  Fn&& fn) {
  if (n < kMinStreamRun) return 0;
  const int64_t g = std::clamp<int64_t>(kStreamGap / n, 1, 64);
  int64_t r0 = 0;
  for (; r0 + 4 * g <= rows; r0 += 4 * g) {
    for (int64_t i = 0; i < g; ++i) {
      const int64_t r[4] = {r0 + i, r0 + g + i, r0 + 2 * g + i, r0 + 3 * g + i};
      const T* p[4] = {x + r[0] * row_stride, x + r[1] * row_stride,
                       x + r[2] * row_stride, x + r[3] * row_stride};
      fn(p, r);
    }
  }
  return r0;  // Rows done.
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

// One block of cols_run: rows [0, rows) at x (row_stride apart) into the
// w partials, which start at the identity. Four rows a quarter of the
// block apart per pass over the partials: four streams, which one core
// reads faster than one. kFast (max and min) takes plain extremes and a NaN
// hint (see nan_hint) and returns false where the hint shows a possible
// NaN; the caller then redoes the block exactly.
template <SimdReduce K, bool kFast, class T>
bool cols_block(const T* x, int64_t rows, int64_t row_stride, int64_t w,
                const Compute<T>* sh, Compute<T>* part) {
  using C = Compute<T>;
  constexpr bool kMax = K == SimdReduce::max;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t wv = w / N * N;
  std::fill(part, part + w, identity<K, C>());
  auto hint = hn::Zero(d);
  const int64_t q = rows / 4;
  for (int64_t i = 0; i < q; ++i) {
    const T* a = x + i * row_stride;
    const T* b = a + q * row_stride;
    const T* c = b + q * row_stride;
    const T* e = c + q * row_stride;
    for (int64_t j = 0; j < wv; j += N) {
      auto p = hn::Load(d, part + j);
      const auto va = load(d, a + j), vb = load(d, b + j);
      const auto vc = load(d, c + j), ve = load(d, e + j);
      if constexpr (kFast) {
        hint = nan_hint(d, hint, va, vb, vc, ve);
        p = extreme<kMax>(
            p, extreme<kMax>(extreme<kMax>(va, vb), extreme<kMax>(vc, ve)));
      } else if constexpr (K == SimdReduce::max || K == SimdReduce::min) {
        // A tree: one dependent NaN-aware step per pass, not four.
        const auto s = hn::Zero(d);
        p = col_step<K>(d, p,
                        col_step<K>(d, col_step<K>(d, va, vb, s),
                                    col_step<K>(d, vc, ve, s), s),
                        s);
      } else {
        const auto s = hn::Load(d, sh + j);
        p = col_step<K>(d, p, va, s);
        p = col_step<K>(d, p, vb, s);
        p = col_step<K>(d, p, vc, s);
        p = col_step<K>(d, p, ve, s);
      }
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
  for (int64_t r = 4 * q; r < rows; ++r) {
    const T* row = x + r * row_stride;
    for (int64_t j = 0; j < wv; j += N) {
      const auto v = load(d, row + j);
      auto p = hn::Load(d, part + j);
      if constexpr (kFast) {
        hint = hn::Add(hint, v);
        p = extreme<kMax>(p, v);
      } else {
        p = col_step<K>(d, p, v, hn::Load(d, sh + j));
      }
      hn::Store(p, d, part + j);
    }
    for (int64_t j = wv; j < w; ++j) {
      part[j] = scalar_step<K>(part[j], to_compute(row[j]), sh[j]);
    }
  }
  return hint_clear(d, hint);
}

// Accumulates whole rows into a tile of f32 partials in L1 (cols_block),
// flushing them to the double accumulators every kBlockSteps rows. A tile
// spans whole rows of up to kTile elements, so memory is read in long
// sequential runs.
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
    constexpr bool kExtreme = K == SimdReduce::max || K == SimdReduce::min;
    constexpr int64_t kTile = 2048;
    HWY_ALIGN C part[kTile];
    HWY_ALIGN C sh[kTile];
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t w = std::min(kTile, n - j0);
      for (int64_t j = 0; j < w; ++j) sh[j] = shift ? C(shift[j0 + j]) : C(0);
      for (int64_t r0 = 0; r0 < rows; r0 += kBlockSteps) {
        const int64_t r1 = std::min(rows, r0 + kBlockSteps);
        const T* xb = x + r0 * row_stride + j0;
        if (!kExtreme ||
            !cols_block<K, kExtreme>(xb, r1 - r0, row_stride, w, sh, part)) {
          cols_block<K, false>(xb, r1 - r0, row_stride, w, sh, part);
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

template <SimdReduce K, class T>
int64_t sum_rows4(const T* x, int64_t rows, int64_t row_stride, int64_t n,
                  const double* shift, double* res, int64_t res_stride) {
  return for_rows4(x, rows, row_stride, n,
                   [&](const T* const* p, const int64_t* r) {
                     double sh[4], out[4];
                     for (int k = 0; k < 4; ++k) {
                       sh[k] = shift ? shift[r[k] * res_stride] : 0.0;
                     }
                     sum_runs4<K>(p, n, sh, out);
                     for (int k = 0; k < 4; ++k)
                       res[r[k] * res_stride] = out[k];
                   });
}

template <bool kMax, class T>
int64_t extreme_rows4(const T* x, int64_t rows, int64_t row_stride, int64_t n,
                      double* res, int64_t res_stride) {
  return for_rows4(x, rows, row_stride, n,
                   [&](const T* const* p, const int64_t* r) {
                     Compute<T> out[4];
                     extreme_runs4<kMax>(p, n, out);
                     for (int k = 0; k < 4; ++k) {
                       res[r[k] * res_stride] = double(out[k]);
                     }
                   });
}

// Rows reduced four streams at a time where that helps (sum_exp_dev is
// compute-bound); returns the number of leading rows done.
template <class T>
int64_t reduce_rows4(SimdReduce kind, const T* x, int64_t rows,
                     int64_t row_stride, int64_t n, const double* shift,
                     double* res, int64_t res_stride) {
  if constexpr (!kSimd<T>) {
    return 0;
  } else {
    switch (kind) {
      case SimdReduce::sum:
        return sum_rows4<SimdReduce::sum>(x, rows, row_stride, n, shift, res,
                                          res_stride);
      case SimdReduce::sum_dev:
        return sum_rows4<SimdReduce::sum_dev>(x, rows, row_stride, n, shift,
                                              res, res_stride);
      case SimdReduce::sum_sq_dev:
        return sum_rows4<SimdReduce::sum_sq_dev>(x, rows, row_stride, n, shift,
                                                 res, res_stride);
      case SimdReduce::max:
        return extreme_rows4<true>(x, rows, row_stride, n, res, res_stride);
      case SimdReduce::min:
        return extreme_rows4<false>(x, rows, row_stride, n, res, res_stride);
      default:
        return 0;
    }
  }
}

template <class T>
void reduce_rows_t(SimdReduce kind, const T* x, int64_t rows,
                   int64_t row_stride, int64_t n, const double* shift,
                   double* res, int64_t res_stride) {
  const int64_t done =
      reduce_rows4(kind, x, rows, row_stride, n, shift, res, res_stride);
  for (int64_t r = done; r < rows; ++r) {
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
  int64_t done = 0;
  if constexpr (kSimd<T>) {
    // Four rows at a time as four streams, in one pass.
    done = for_rows4(x, rows, row_stride, n,
                     [&](const T* const* p, const int64_t* r) {
                       int64_t a[4];
                       if (is_max) {
                         arg_runs4<true>(p, n, a);
                       } else {
                         arg_runs4<false>(p, n, a);
                       }
                       for (int k = 0; k < 4; ++k)
                         idx[r[k] * idx_stride] = a[k];
                     });
  }
  for (int64_t r = done; r < rows; ++r) {
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
