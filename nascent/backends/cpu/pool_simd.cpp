// max_pool2d, avg_pool2d and their backwards on the CPU, NCHW, f32 and f64.
// Planes (n, c) are independent, so threads split the N*C planes and each
// backward writes only its own plane of grad_input: no atomics.
//
// The forward passes run a row of outputs at a time: the columns whose
// windows lie inside the input go through SIMD blocks (Highway, target
// chosen at run time), the edge columns and odd strides through scalar code.
// Small planes (a 14-wide row) still fill one full and one half vector.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/balanced.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/pool_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "nascent/backends/cpu/simd/image-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

using simd::for_blocks;
using simd::load_strided;

// Lanes(d) outputs from column c of a row whose windows cover input rows
// [h0, h1) and, for output column c, input columns c * sw - pw + [0, kw).
// Same rule as the scalar code: a tap wins if greater or NaN, in the
// window's row-major order.
template <class D, class T>
HWY_INLINE void max_block(D d, const T* x, int64_t w, int64_t h0, int64_t h1,
                          int64_t kw, int64_t sw, int64_t pw, int64_t c, T* out,
                          int64_t* indices) {
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  auto lane = hn::Iota(di, 0);
  if (sw == 2) lane = hn::Add(lane, lane);
  auto best = hn::Set(d, -std::numeric_limits<T>::infinity());
  auto best_index = hn::Add(hn::Set(di, TI(h0 * w + c * sw - pw)), lane);
  for (int64_t ih = h0; ih < h1; ++ih) {
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t at = ih * w + c * sw - pw + j;
      const auto v = load_strided(d, x + at, sw);
      const auto take = hn::Or(hn::Gt(v, best), hn::IsNaN(v));
      best = hn::IfThenElse(take, v, best);
      if (indices != nullptr) {
        best_index =
            hn::IfThenElse(hn::RebindMask(di, take),
                           hn::Add(hn::Set(di, TI(at)), lane), best_index);
      }
    }
  }
  hn::StoreU(best, d, out + c);
  if (indices != nullptr) {
    TI lanes[hn::MaxLanes(decltype(di)())];
    hn::StoreU(best_index, di, lanes);
    for (size_t l = 0; l < hn::Lanes(di); ++l) indices[c + l] = lanes[l];
  }
}

template <class D, class T>
HWY_INLINE void avg_block(D d, const T* x, int64_t w, int64_t h0, int64_t h1,
                          int64_t kw, int64_t sw, int64_t pw, int64_t c,
                          T divisor, T* out) {
  auto sum = hn::Zero(d);
  for (int64_t ih = h0; ih < h1; ++ih) {
    for (int64_t j = 0; j < kw; ++j) {
      sum = hn::Add(sum, load_strided(d, x + ih * w + c * sw - pw + j, sw));
    }
  }
  hn::StoreU(hn::Div(sum, hn::Set(d, divisor)), d, out + c);
}

#endif  // HWY_TARGET != HWY_SCALAR

template <class T>
int64_t MaxPoolRow(const T* x, int64_t w, int64_t h0, int64_t h1, int64_t kw,
                   int64_t sw, int64_t pw, int64_t c0, int64_t c1, T* out,
                   int64_t* indices) {
#if HWY_TARGET == HWY_SCALAR
  return c0;
#else
  if constexpr (!simd::kHasLanes<T>) {
    return c0;
  } else {
    return for_blocks<T>(c0, c1, [&](auto d, int64_t c) {
      max_block(d, x, w, h0, h1, kw, sw, pw, c, out, indices);
    });
  }
#endif
}

template <class T>
int64_t AvgPoolRow(const T* x, int64_t w, int64_t h0, int64_t h1, int64_t kw,
                   int64_t sw, int64_t pw, int64_t c0, int64_t c1, T divisor,
                   T* out) {
#if HWY_TARGET == HWY_SCALAR
  return c0;
#else
  if constexpr (!simd::kHasLanes<T>) {
    return c0;
  } else {
    return for_blocks<T>(c0, c1, [&](auto d, int64_t c) {
      avg_block(d, x, w, h0, h1, kw, sw, pw, c, divisor, out);
    });
  }
#endif
}

// `count` whole planes whose windows all lie inside the input (no
// padding): one dispatch for all of them instead of one per output row,
// which cost more than the row itself on small planes (7 outputs). Columns
// past the SIMD blocks take the rule of max_pool_columns.
template <class T>
void MaxPoolPlanes(const T* x, int64_t count, int64_t h, int64_t w, int64_t oh,
                   int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                   T* out, int64_t* indices) {
  for (int64_t q = 0; q < count; ++q) {
    const T* xp = x + q * h * w;
    for (int64_t r = 0; r < oh; ++r) {
      const int64_t h0 = r * sh;
      T* orow = out + (q * oh + r) * ow;
      int64_t* irow =
          indices != nullptr ? indices + (q * oh + r) * ow : nullptr;
      int64_t c = MaxPoolRow(xp, w, h0, h0 + kh, kw, sw, 0, 0, ow, orow, irow);
      for (; c < ow; ++c) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_index = h0 * w + c * sw;
        for (int64_t ih = h0; ih < h0 + kh; ++ih) {
          for (int64_t iw = c * sw; iw < c * sw + kw; ++iw) {
            const T v = xp[ih * w + iw];
            if (v > best || v != v) best = v, best_index = ih * w + iw;
          }
        }
        orow[c] = best;
        if (irow != nullptr) irow[c] = best_index;
      }
    }
  }
}

void MaxPoolPlanesF32(const float* x, int64_t count, int64_t h, int64_t w,
                      int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                      int64_t sh, int64_t sw, float* out, int64_t* indices) {
  MaxPoolPlanes(x, count, h, w, oh, ow, kh, kw, sh, sw, out, indices);
}
void MaxPoolPlanesF64(const double* x, int64_t count, int64_t h, int64_t w,
                      int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                      int64_t sh, int64_t sw, double* out, int64_t* indices) {
  MaxPoolPlanes(x, count, h, w, oh, ow, kh, kw, sh, sw, out, indices);
}

int64_t MaxPoolRowF32(const float* x, int64_t w, int64_t h0, int64_t h1,
                      int64_t kw, int64_t sw, int64_t pw, int64_t c0,
                      int64_t c1, float* out, int64_t* indices) {
  return MaxPoolRow(x, w, h0, h1, kw, sw, pw, c0, c1, out, indices);
}
int64_t MaxPoolRowF64(const double* x, int64_t w, int64_t h0, int64_t h1,
                      int64_t kw, int64_t sw, int64_t pw, int64_t c0,
                      int64_t c1, double* out, int64_t* indices) {
  return MaxPoolRow(x, w, h0, h1, kw, sw, pw, c0, c1, out, indices);
}
int64_t AvgPoolRowF32(const float* x, int64_t w, int64_t h0, int64_t h1,
                      int64_t kw, int64_t sw, int64_t pw, int64_t c0,
                      int64_t c1, float divisor, float* out) {
  return AvgPoolRow(x, w, h0, h1, kw, sw, pw, c0, c1, divisor, out);
}
int64_t AvgPoolRowF64(const double* x, int64_t w, int64_t h0, int64_t h1,
                      int64_t kw, int64_t sw, int64_t pw, int64_t c0,
                      int64_t c1, double divisor, double* out) {
  return AvgPoolRow(x, w, h0, h1, kw, sw, pw, c0, c1, divisor, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(MaxPoolPlanesF32);
HWY_EXPORT(MaxPoolPlanesF64);
HWY_EXPORT(MaxPoolRowF32);
HWY_EXPORT(MaxPoolRowF64);
HWY_EXPORT(AvgPoolRowF32);
HWY_EXPORT(AvgPoolRowF64);

namespace {

void max_pool_planes(const float* x, int64_t count, int64_t h, int64_t w,
                     int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, float* out, int64_t* indices) {
  HWY_DYNAMIC_DISPATCH(MaxPoolPlanesF32)
  (x, count, h, w, oh, ow, kh, kw, sh, sw, out, indices);
}
void max_pool_planes(const double* x, int64_t count, int64_t h, int64_t w,
                     int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, double* out, int64_t* indices) {
  HWY_DYNAMIC_DISPATCH(MaxPoolPlanesF64)
  (x, count, h, w, oh, ow, kh, kw, sh, sw, out, indices);
}
int64_t max_pool_row(const float* x, int64_t w, int64_t h0, int64_t h1,
                     int64_t kw, int64_t sw, int64_t pw, int64_t c0, int64_t c1,
                     float* out, int64_t* indices) {
  return HWY_DYNAMIC_DISPATCH(MaxPoolRowF32)(x, w, h0, h1, kw, sw, pw, c0, c1,
                                             out, indices);
}
int64_t max_pool_row(const double* x, int64_t w, int64_t h0, int64_t h1,
                     int64_t kw, int64_t sw, int64_t pw, int64_t c0, int64_t c1,
                     double* out, int64_t* indices) {
  return HWY_DYNAMIC_DISPATCH(MaxPoolRowF64)(x, w, h0, h1, kw, sw, pw, c0, c1,
                                             out, indices);
}
int64_t avg_pool_row(const float* x, int64_t w, int64_t h0, int64_t h1,
                     int64_t kw, int64_t sw, int64_t pw, int64_t c0, int64_t c1,
                     float divisor, float* out) {
  return HWY_DYNAMIC_DISPATCH(AvgPoolRowF32)(x, w, h0, h1, kw, sw, pw, c0, c1,
                                             divisor, out);
}
int64_t avg_pool_row(const double* x, int64_t w, int64_t h0, int64_t h1,
                     int64_t kw, int64_t sw, int64_t pw, int64_t c0, int64_t c1,
                     double divisor, double* out) {
  return HWY_DYNAMIC_DISPATCH(AvgPoolRowF64)(x, w, h0, h1, kw, sw, pw, c0, c1,
                                             divisor, out);
}

struct PoolGeometry {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
  int64_t hw() const { return h * w; }
  int64_t ohw() const { return oh * ow; }
};

// The window of one output along one axis: [lo, hi) clipped to the input,
// and its size counting padding (PyTorch's divisor with count_include_pad).
struct Window {
  int64_t lo, hi, padded_size;
};
Window window(int64_t out_index, int64_t stride, int64_t pad, int64_t kernel,
              int64_t size) {
  int64_t lo = out_index * stride - pad;
  int64_t hi = std::min(lo + kernel, size + pad);
  int64_t padded = hi - lo;
  return {std::max<int64_t>(lo, 0), std::min(hi, size), padded};
}

int64_t plane_grain(const PoolGeometry& g) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(g.hw(), 1));
}

// ceil(a / b) for b > 0 and any a.
int64_t div_up(int64_t a, int64_t b) {
  return a <= 0 ? -(-a / b) : (a + b - 1) / b;
}

// Output columns [lo, hi) whose tap j reads an input column inside [0, w).
struct Columns {
  int64_t lo, hi;
};
Columns tap_columns(const PoolGeometry& g, int64_t j) {
  int64_t lo = std::clamp<int64_t>(div_up(g.pw - j, g.sw), 0, g.ow);
  int64_t hi = std::clamp<int64_t>(div_up(g.w + g.pw - j, g.sw), lo, g.ow);
  return {lo, hi};
}

// The divisor of avg pooling for output column c, given the row's window.
int64_t avg_count(const PoolGeometry& g, const Window& wr, int64_t c) {
  const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
  return g.count_include_pad ? wr.padded_size * wc.padded_size
                             : (wr.hi - wr.lo) * (wc.hi - wc.lo);
}

// floor(a / b) for b > 0 and any a.
int64_t div_down(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Output columns whose whole window lies inside the input.
Columns interior_columns(const PoolGeometry& g) {
  int64_t lo = std::clamp<int64_t>(div_up(g.pw, g.sw), 0, g.ow);
  int64_t hi =
      std::clamp<int64_t>(div_down(g.w + g.pw - g.kw, g.sw) + 1, lo, g.ow);
  return {lo, hi};
}

// SIMD rows load strides 1 and 2, and keep f32 indices in 32-bit lanes.
bool simd_rows(const PoolGeometry& g) {
  return (g.sw == 1 || g.sw == 2) &&
         g.hw() <= int64_t(std::numeric_limits<int32_t>::max());
}

// mask (all ones or zero) ? a : b, by bits: compilers turn a ternary on a
// float comparison back into a branch, which mispredicts on random data.
template <class T>
T select(int64_t mask, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits ab, bb;
  std::memcpy(&ab, &a, sizeof(T));
  std::memcpy(&bb, &b, sizeof(T));
  Bits r = (ab & Bits(mask)) | (bb & ~Bits(mask));
  std::memcpy(&a, &r, sizeof(T));
  return a;
}

// Max skips padding and lets NaN win, keeping the index of the last NaN and
// otherwise of the first maximum, exactly as PyTorch's CPU kernel. This
// scalar form takes the edge columns; max_pool_row the interior.
template <class T>
void max_pool_columns(const PoolGeometry& g, const T* x, const Window& wr,
                      int64_t c0, int64_t c1, T* out, int64_t* indices) {
  for (int64_t c = c0; c < c1; ++c) {
    const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
    T best = -std::numeric_limits<T>::infinity();
    int64_t best_index = wr.lo * g.w + wc.lo;
    for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
      for (int64_t iw = wc.lo; iw < wc.hi; ++iw) {
        const T v = x[ih * g.w + iw];
        const int64_t take = -int64_t((v > best) | (v != v));
        best = select(take, v, best);
        best_index = (take & (ih * g.w + iw)) | (~take & best_index);
      }
    }
    out[c] = best;
    if (indices != nullptr) indices[c] = best_index;
  }
}

template <class T>
void max_pool_plane(const PoolGeometry& g, const T* x, T* out,
                    int64_t* indices) {
  const Columns inner = interior_columns(g);
  const bool simd = simd_rows(g) && inner.lo < inner.hi;
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    T* orow = out + r * g.ow;
    int64_t* irow = indices != nullptr ? indices + r * g.ow : nullptr;
    int64_t c = 0;
    if (simd) {
      max_pool_columns(g, x, wr, 0, inner.lo, orow, irow);
      c = max_pool_row(x, g.w, wr.lo, wr.hi, g.kw, g.sw, g.pw, inner.lo,
                       inner.hi, orow, irow);
    }
    max_pool_columns(g, x, wr, c, g.ow, orow, irow);
  }
}

template <class T>
void avg_pool_columns(const PoolGeometry& g, const T* x, const Window& wr,
                      int64_t c0, int64_t c1, T* out) {
  for (int64_t c = c0; c < c1; ++c) {
    const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
    T sum = T(0);
    for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
      for (int64_t iw = wc.lo; iw < wc.hi; ++iw) sum += x[ih * g.w + iw];
    }
    out[c] = sum / T(avg_count(g, wr, c));
  }
}

template <class T>
void avg_pool_plane(const PoolGeometry& g, const T* x, T* out) {
  const Columns inner = interior_columns(g);
  const bool simd = simd_rows(g) && inner.lo < inner.hi;
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    T* orow = out + r * g.ow;
    int64_t c = 0;
    if (simd) {
      avg_pool_columns(g, x, wr, 0, inner.lo, orow);
      // Interior windows are kw wide, padded or not.
      const int64_t rows = g.count_include_pad ? wr.padded_size : wr.hi - wr.lo;
      c = avg_pool_row(x, g.w, wr.lo, wr.hi, g.kw, g.sw, g.pw, inner.lo,
                       inner.hi, T(rows * g.kw), orow);
    }
    avg_pool_columns(g, x, wr, c, g.ow, orow);
  }
}

// Returns false if an index falls outside the plane (that gradient is
// dropped; the caller raises).
template <class T>
bool max_pool_backward_plane(const PoolGeometry& g, const T* gout,
                             const int64_t* indices, T* dx) {
  std::fill(dx, dx + g.hw(), T(0));
  bool ok = true;
  for (int64_t i = 0; i < g.ohw(); ++i) {
    const int64_t at = indices[i];
    if (at < 0 || at >= g.hw()) {
      ok = false;
      continue;
    }
    dx[at] += gout[i];
  }
  return ok;
}

template <class T>
void avg_pool_backward_plane(const PoolGeometry& g, const T* gout, T* dx,
                             T* share) {
  std::fill(dx, dx + g.hw(), T(0));
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    for (int64_t c = 0; c < g.ow; ++c) {
      share[c] = gout[r * g.ow + c] / T(avg_count(g, wr, c));
    }
    for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const Columns cr = tap_columns(g, j);
        T* dst = dx + ih * g.w + j - g.pw;
        for (int64_t c = cr.lo; c < cr.hi; ++c) dst[c * g.sw] += share[c];
      }
    }
  }
}

}  // namespace

void Backend::pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
                     const Pool2dParams& p, Tensor& out, Tensor* out_indices) {
  const bool backward =
      op == PoolOp::max_pool2d_backward || op == PoolOp::avg_pool2d_backward;
  // Forward: x is the input; backward: x is grad_out and out grad_input.
  const Shape& in = backward ? out.shape() : x.shape();
  const Shape& pooled = backward ? x.shape() : out.shape();
  const PoolGeometry g{in[0] * in[1], in[2],        in[3],
                       pooled[2],     pooled[3],    p.kernel[0],
                       p.kernel[1],   p.stride[0],  p.stride[1],
                       p.padding[0],  p.padding[1], p.count_include_pad};
  const Tensor xc = x.contiguous();
  const Tensor ic = indices != nullptr ? indices->contiguous() : Tensor();
  const int64_t grain = plane_grain(g);
  std::atomic<bool> bad_index{false};
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* src = data_ptr<T>(xc);
      T* dst = data_ptr<T>(out);
      switch (op) {
        case PoolOp::max_pool2d: {
          int64_t* idx = out_indices != nullptr
                             ? data_ptr<int64_t>(*out_indices)
                             : nullptr;
          const bool inside = g.ph == 0 && g.pw == 0 &&
                              (g.oh - 1) * g.sh + g.kh <= g.h &&
                              (g.ow - 1) * g.sw + g.kw <= g.w;
          balanced_for(g.planes, grain, [&](int64_t s, int64_t e) {
            if (inside && simd_rows(g)) {
              max_pool_planes(src + s * g.hw(), e - s, g.h, g.w, g.oh, g.ow,
                              g.kh, g.kw, g.sh, g.sw, dst + s * g.ohw(),
                              idx != nullptr ? idx + s * g.ohw() : nullptr);
              return;
            }
            for (int64_t q = s; q < e; ++q) {
              max_pool_plane(g, src + q * g.hw(), dst + q * g.ohw(),
                             idx != nullptr ? idx + q * g.ohw() : nullptr);
            }
          });
          break;
        }
        case PoolOp::avg_pool2d:
          balanced_for(g.planes, grain, [&](int64_t s, int64_t e) {
            for (int64_t q = s; q < e; ++q) {
              avg_pool_plane(g, src + q * g.hw(), dst + q * g.ohw());
            }
          });
          break;
        case PoolOp::max_pool2d_backward: {
          const int64_t* idx = data_ptr<int64_t>(ic);
          balanced_for(g.planes, grain, [&](int64_t s, int64_t e) {
            for (int64_t q = s; q < e; ++q) {
              if (!max_pool_backward_plane(g, src + q * g.ohw(),
                                           idx + q * g.ohw(),
                                           dst + q * g.hw())) {
                bad_index.store(true);
              }
            }
          });
          break;
        }
        case PoolOp::avg_pool2d_backward:
          balanced_for(g.planes, grain, [&](int64_t s, int64_t e) {
            std::vector<T> share(size_t(g.ow));
            for (int64_t q = s; q < e; ++q) {
              avg_pool_backward_plane(g, src + q * g.ohw(), dst + q * g.hw(),
                                      share.data());
            }
          });
          break;
      }
    } else {
      throw BackendError(fmt::format("cpu: {} takes f32 or f64, got {}",
                                     nascent::name(op), out.to_string()));
    }
  });
  if (bad_index.load()) {
    throw ValueError(fmt::format(
        "max_pool2d_backward: an index lies outside its plane of {}x{} = {} "
        "elements (indices must come from max_pool2d_with_indices on input "
        "shape {})",
        g.h, g.w, g.hw(), nascent::to_string(in)));
  }
}

}  // namespace nascent::cpu

#endif  // HWY_ONCE
