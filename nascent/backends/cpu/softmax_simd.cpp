// softmax and log_softmax on the CPU. x is contiguous, seen as
// [outer, len, inner] around the axis.
//  - inner == 1 (the last axis, the usual case): a row at a time, in three
//    passes while the row sits in L1/L2: the max, exp(x - max) and its sum
//    (exp kept in the output, or in a float scratch row for f16/bf16), then
//    the scaling. Rows run in parallel.
//  - inner > 1: the same passes, vectorised across the inner axis.
// A NaN in a row makes the row NaN; +inf gives NaN as in PyTorch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/softmax_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "nascent/backends/cpu/reduce/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu::HWY_NAMESPACE {

// Targets without f64 vectors (see kSimd): plain loops over a line of len
// elements `stride` apart.
template <class T>
void softmax_line_scalar(const T* x, T* y, int64_t len, int64_t stride,
                         bool log) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t l = 0; l < len; ++l)
    m = scalar_nan_max(m, double(x[l * stride]));
  double s = 0.0;
  for (int64_t l = 0; l < len; ++l) s += std::exp(double(x[l * stride]) - m);
  for (int64_t l = 0; l < len; ++l) {
    const double t = double(x[l * stride]) - m;
    y[l * stride] = T(m != m ? m : log ? t - std::log(s) : std::exp(t) / s);
  }
}

template <class T>
void softmax_rows_simd(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using C = Compute<T>;
  const hn::ScalableTag<C> d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  std::vector<C> scratch(std::is_same_v<T, C> || log ? 0 : size_t(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const C m = extreme_run<true>(xr, n);
    if (m != m) {
      std::fill(yr, yr + n, from_compute<T>(m));
      continue;
    }
    // exp(x - m), summed in f32 blocks flushed to double.
    C* e = nullptr;
    if constexpr (std::is_same_v<T, C>) {
      e = yr;
    } else {
      e = scratch.data();
    }
    const auto vm = hn::Set(d, m);
    double sum = 0.0;
    int64_t i = 0;
    while (i < n) {
      auto s0 = hn::Zero(d), s1 = s0;
      const int64_t end = std::min(n, i + 2 * N * kBlockSteps);
      for (; i + 2 * N <= end; i += 2 * N) {
        const auto e0 = ExpNonPositive(d, hn::Sub(load(d, xr + i), vm));
        const auto e1 = ExpNonPositive(d, hn::Sub(load(d, xr + i + N), vm));
        if (!log) {
          hn::StoreU(e0, d, e + i);
          hn::StoreU(e1, d, e + i + N);
        }
        s0 = hn::Add(s0, e0);
        s1 = hn::Add(s1, e1);
      }
      for (; i < end; i += N) {
        const size_t count = size_t(std::min(N, end - i));
        const auto v = count == size_t(N)
                           ? load(d, xr + i)
                           : load_tail(d, xr + i, count, kNegInf);
        const auto ev = ExpNonPositive(d, hn::Sub(v, vm));
        if (!log) store_tail(d, ev, e + i, count);
        s0 = hn::Add(s0, ev);
      }
      sum += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
    }
    i = 0;
    if (log) {
      // (x - m) - log(sum): exact first step, so big inputs keep precision.
      const auto vl = hn::Set(d, C(std::log(sum)));
      for (; i + N <= n; i += N) {
        store(d, hn::Sub(hn::Sub(load(d, xr + i), vm), vl), yr + i);
      }
      if (i < n) {
        const size_t count = size_t(n - i);
        const auto v = load_tail(d, xr + i, count, C(0));
        store_tail(d, hn::Sub(hn::Sub(v, vm), vl), yr + i, count);
      }
    } else {
      const auto vinv = hn::Set(d, C(1.0 / sum));
      for (; i + N <= n; i += N) {
        store(d, hn::Mul(hn::LoadU(d, e + i), vinv), yr + i);
      }
      if (i < n) {
        const size_t count = size_t(n - i);
        const auto v = load_tail(d, e + i, count, C(0));
        store_tail(d, hn::Mul(v, vinv), yr + i, count);
      }
    }
  }
}

template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  if constexpr (!kSimd<T>) {
    for (int64_t r = 0; r < rows; ++r) {
      softmax_line_scalar(x + r * n, y + r * n, n, 1, log);
    }
  } else {
    softmax_rows_simd(x, y, rows, n, log);
  }
}

// Softmax along the middle axis of one [len, inner] slab, columns [j0, j1).
template <class T>
void softmax_cols(const T* x, T* y, int64_t len, int64_t inner, int64_t j0,
                  int64_t j1, bool log) {
  using C = Compute<T>;
  if constexpr (!kSimd<T>) {
    for (int64_t j = j0; j < j1; ++j) {
      softmax_line_scalar(x + j, y + j, len, inner, log);
    }
    return;
  } else {
    const hn::ScalableTag<C> d;
    const int64_t N = int64_t(hn::Lanes(d));
    const int64_t w = j1 - j0, wv = w / N * N;
    std::vector<C> m(size_t(w), -std::numeric_limits<C>::infinity());
    std::vector<C> s(size_t(w), C(0));
    for (int64_t l = 0; l < len; ++l) {
      const T* row = x + l * inner + j0;
      for (int64_t j = 0; j < wv; j += N) {
        hn::StoreU(nan_max(hn::LoadU(d, m.data() + j), load(d, row + j)), d,
                   m.data() + j);
      }
      for (int64_t j = wv; j < w; ++j) {
        m[size_t(j)] = scalar_nan_max(m[size_t(j)], to_compute(row[j]));
      }
    }
    for (int64_t l = 0; l < len; ++l) {
      const T* row = x + l * inner + j0;
      for (int64_t j = 0; j < wv; j += N) {
        const auto e = ExpNonPositive(
            d, hn::Sub(load(d, row + j), hn::LoadU(d, m.data() + j)));
        hn::StoreU(hn::Add(hn::LoadU(d, s.data() + j), e), d, s.data() + j);
      }
      for (int64_t j = wv; j < w; ++j) {
        s[size_t(j)] += std::exp(to_compute(row[j]) - m[size_t(j)]);
      }
    }
    // NaN columns stay NaN: the scale (1/sum or log(sum)) is made NaN.
    for (int64_t j = 0; j < w; ++j) {
      const C mj = m[size_t(j)];
      s[size_t(j)] = mj != mj ? mj
                     : log    ? std::log(s[size_t(j)])
                              : C(1) / s[size_t(j)];
    }
    for (int64_t l = 0; l < len; ++l) {
      const T* row = x + l * inner + j0;
      T* out = y + l * inner + j0;
      for (int64_t j = 0; j < wv; j += N) {
        const auto t = hn::Sub(load(d, row + j), hn::LoadU(d, m.data() + j));
        const auto k = hn::LoadU(d, s.data() + j);
        store(d, log ? hn::Sub(t, k) : hn::Mul(ExpNonPositive(d, t), k),
              out + j);
      }
      for (int64_t j = wv; j < w; ++j) {
        const C t = to_compute(row[j]) - m[size_t(j)];
        out[j] = from_compute<T>(log ? t - s[size_t(j)]
                                     : std::exp(t) * s[size_t(j)]);
      }
    }
  }
}

template <class T>
void softmax_t(const void* x, void* y, int64_t outer, int64_t len,
               int64_t inner, int64_t begin, int64_t end, bool log) {
  const T* xt = static_cast<const T*>(x);
  T* yt = static_cast<T*>(y);
  if (inner == 1) {
    softmax_rows(xt + begin * len, yt + begin * len, end - begin, len, log);
    return;
  }
  // Items are (outer index, tile of kTile columns).
  constexpr int64_t kTile = 256;
  const int64_t tiles = (inner + kTile - 1) / kTile;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t o = t / tiles, j0 = t % tiles * kTile;
    softmax_cols(xt + o * len * inner, yt + o * len * inner, len, inner, j0,
                 std::min(inner, j0 + kTile), log);
  }
  (void)outer;
}

// Runs work items [begin, end): rows when inner == 1, else column tiles.
void Softmax(bool log, DType dtype, const void* x, void* y, int64_t outer,
             int64_t len, int64_t inner, int64_t begin, int64_t end) {
  switch (dtype) {
    case DType::f32:
      return softmax_t<float>(x, y, outer, len, inner, begin, end, log);
    case DType::f64:
      return softmax_t<double>(x, y, outer, len, inner, begin, end, log);
    case DType::f16:
      return softmax_t<float16>(x, y, outer, len, inner, begin, end, log);
    case DType::bf16:
      return softmax_t<bfloat16>(x, y, outer, len, inner, begin, end, log);
    default:
      return;
  }
}

}  // namespace nascent::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(Softmax);

void Backend::softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) {
  const bool log = op == SoftmaxOp::log_softmax;
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < x.ndim(); ++d) {
    const int64_t size = x.shape()[size_t(d)];
    (d < axis ? outer : d == axis ? len : inner) *= size;
  }
  if (out.numel() == 0) return;
  const int64_t items = inner == 1 ? outer : outer * ((inner + 255) / 256);
  const int64_t per_item =
      inner == 1 ? len : len * std::min<int64_t>(inner, 256);
  // exp makes an element cost several adds: smaller grain than copies.
  const int64_t grain = std::max<int64_t>(1, 8192 / per_item);
  const void* xp = byte_ptr(x);
  void* yp = byte_ptr(out);
  const DType dtype = x.dtype();
  parallel_for(items, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(Softmax)(log, dtype, xp, yp, outer, len, inner, b, e);
  });
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
