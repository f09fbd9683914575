// max_pool2d, avg_pool2d and their backwards on the CPU, NCHW, f32 and f64.
// Planes (n, c) are independent, so threads split the N*C planes and each
// backward writes only its own plane of grad_input: no atomics.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

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

// Max skips padding and lets NaN win, keeping the index of the last NaN and
// otherwise of the first maximum, exactly as PyTorch's CPU kernel.
template <class T>
void max_pool_plane(const PoolGeometry& g, const T* x, T* out,
                    int64_t* indices) {
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    for (int64_t c = 0; c < g.ow; ++c) {
      const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
      T best = -std::numeric_limits<T>::infinity();
      int64_t best_index = wr.lo * g.w + wc.lo;
      for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
        for (int64_t iw = wc.lo; iw < wc.hi; ++iw) {
          const T v = x[ih * g.w + iw];
          if (v > best || std::isnan(v)) {
            best = v;
            best_index = ih * g.w + iw;
          }
        }
      }
      out[r * g.ow + c] = best;
      if (indices != nullptr) indices[r * g.ow + c] = best_index;
    }
  }
}

template <class T>
void avg_pool_plane(const PoolGeometry& g, const T* x, T* out) {
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    for (int64_t c = 0; c < g.ow; ++c) {
      const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
      T sum = T(0);
      for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
        for (int64_t iw = wc.lo; iw < wc.hi; ++iw) sum += x[ih * g.w + iw];
      }
      const int64_t count = g.count_include_pad
                                ? wr.padded_size * wc.padded_size
                                : (wr.hi - wr.lo) * (wc.hi - wc.lo);
      out[r * g.ow + c] = sum / T(count);
    }
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
void avg_pool_backward_plane(const PoolGeometry& g, const T* gout, T* dx) {
  std::fill(dx, dx + g.hw(), T(0));
  for (int64_t r = 0; r < g.oh; ++r) {
    const Window wr = window(r, g.sh, g.ph, g.kh, g.h);
    for (int64_t c = 0; c < g.ow; ++c) {
      const Window wc = window(c, g.sw, g.pw, g.kw, g.w);
      const int64_t count = g.count_include_pad
                                ? wr.padded_size * wc.padded_size
                                : (wr.hi - wr.lo) * (wc.hi - wc.lo);
      const T share = gout[r * g.ow + c] / T(count);
      for (int64_t ih = wr.lo; ih < wr.hi; ++ih) {
        for (int64_t iw = wc.lo; iw < wc.hi; ++iw) dx[ih * g.w + iw] += share;
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
          parallel_for(g.planes, grain, [&](int64_t s, int64_t e) {
            for (int64_t q = s; q < e; ++q) {
              max_pool_plane(g, src + q * g.hw(), dst + q * g.ohw(),
                             idx != nullptr ? idx + q * g.ohw() : nullptr);
            }
          });
          break;
        }
        case PoolOp::avg_pool2d:
          parallel_for(g.planes, grain, [&](int64_t s, int64_t e) {
            for (int64_t q = s; q < e; ++q) {
              avg_pool_plane(g, src + q * g.hw(), dst + q * g.ohw());
            }
          });
          break;
        case PoolOp::max_pool2d_backward: {
          const int64_t* idx = data_ptr<int64_t>(ic);
          parallel_for(g.planes, grain, [&](int64_t s, int64_t e) {
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
          parallel_for(g.planes, grain, [&](int64_t s, int64_t e) {
            for (int64_t q = s; q < e; ++q) {
              avg_pool_backward_plane(g, src + q * g.ohw(), dst + q * g.hw());
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
