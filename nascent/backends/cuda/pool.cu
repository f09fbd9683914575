// max_pool2d, avg_pool2d and their backwards, NCHW, f32 and f64 (core
// computes f16 and bf16 in f32), with the CPU backend's semantics
// (cpu/pool_simd.cpp): max skips padding, lets NaN win and keeps the index of
// the first maximum (of the last NaN); avg divides by the padded or the clipped
// window size. A thread per output for the forwards; the backwards are
// gathers, a thread per input element summing the outputs whose windows
// hold it, so no atomics are needed and sums keep a fixed order.
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>

#include <cuda_runtime.h>

#include "nascent/backends/cuda/device.cuh"

namespace nascent::cuda {

namespace {

struct PoolGeo {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
  bool include_pad;
};

struct Window {
  int64_t lo, hi, padded;
};

NASCENT_D Window window(int64_t o, int64_t stride, int64_t pad, int64_t k,
                        int64_t size) {
  const int64_t lo = o * stride - pad;
  const int64_t hi = min(lo + k, size + pad);
  return {max(lo, int64_t(0)), min(hi, size), hi - lo};
}

NASCENT_D int64_t count(const PoolGeo& g, const Window& r, const Window& c) {
  return g.include_pad ? r.padded * c.padded : (r.hi - r.lo) * (c.hi - c.lo);
}

template <class T>
__global__ void max_pool(const T* x, T* y, int64_t* idx, PoolGeo g) {
  const int64_t total = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = i / g.ow % g.oh, q = i / (g.ow * g.oh);
    const Window r = window(oy, g.sh, g.ph, g.kh, g.h);
    const Window c = window(ox, g.sw, g.pw, g.kw, g.w);
    const T* plane = x + q * g.h * g.w;
    T best = -INFINITY;
    int64_t at = r.lo * g.w + c.lo;
    for (int64_t yy = r.lo; yy < r.hi; ++yy) {
      for (int64_t xx = c.lo; xx < c.hi; ++xx) {
        const T v = plane[yy * g.w + xx];
        if (v > best || v != v) {
          best = v;
          at = yy * g.w + xx;
        }
      }
    }
    y[i] = best;
    if (idx != nullptr) idx[i] = at;
  }
}

template <class T>
__global__ void avg_pool(const T* x, T* y, PoolGeo g) {
  const int64_t total = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = i / g.ow % g.oh, q = i / (g.ow * g.oh);
    const Window r = window(oy, g.sh, g.ph, g.kh, g.h);
    const Window c = window(ox, g.sw, g.pw, g.kw, g.w);
    const T* plane = x + q * g.h * g.w;
    T sum = T(0);
    for (int64_t yy = r.lo; yy < r.hi; ++yy) {
      for (int64_t xx = c.lo; xx < c.hi; ++xx) sum += plane[yy * g.w + xx];
    }
    y[i] = sum / T(count(g, r, c));
  }
}

// Outputs [lo, hi) along one axis whose windows hold input position v.
struct Range {
  int64_t lo, hi;
};
NASCENT_D Range outputs_holding(int64_t v, int64_t stride, int64_t pad,
                                int64_t k, int64_t out) {
  // o * stride - pad <= v < o * stride - pad + k.
  const int64_t a = v + pad - k + 1;  // o * stride >= a
  int64_t lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  int64_t hi = (v + pad) / stride + 1;
  return {min(lo, out), min(hi, out)};
}

// Indices outside their plane would drop gradient: the backward kernels
// flag them (bad null: indices max_pool2d wrote, no check needed).
__device__ void flag_out_of_plane(const int64_t* idx, const PoolGeo& g,
                                  int* bad) {
  if (bad == nullptr) return;
  const int64_t outs = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < outs;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (idx[i] < 0 || idx[i] >= g.h * g.w) *bad = 1;
  }
}

template <class T>
__global__ void max_pool_backward(const T* gout, const int64_t* idx, T* dx,
                                  PoolGeo g, int* bad) {
  const int64_t total = g.planes * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t xx = i % g.w, yy = i / g.w % g.h, q = i / (g.w * g.h);
    const int64_t at = yy * g.w + xx;
    const Range rr = outputs_holding(yy, g.sh, g.ph, g.kh, g.oh);
    const Range rc = outputs_holding(xx, g.sw, g.pw, g.kw, g.ow);
    const int64_t base = q * g.oh * g.ow;
    T acc = T(0);
    for (int64_t oy = rr.lo; oy < rr.hi; ++oy) {
      for (int64_t ox = rc.lo; ox < rc.hi; ++ox) {
        const int64_t o = base + oy * g.ow + ox;
        if (idx[o] == at) acc += gout[o];
      }
    }
    dx[i] = acc;
  }
  flag_out_of_plane(idx, g, bad);
}

// max_pool_backward for windows that tile the plane (kernel == stride, no
// padding: each input lies in at most one window) with 32-bit indices and
// multiply-and-shift divisions: the gather above spent its time on 64-bit
// divisions (106 us for the CNN's first pool at batch 256 on the H200).
// The same sums: 0 + the one output's gradient, or 0.
template <class T>
__global__ void max_pool_backward_tiles(const T* gout, const int64_t* idx,
                                        T* dx, PoolGeo g, IntDivider plane,
                                        IntDivider width, IntDivider kh,
                                        IntDivider kw, int* bad) {
  const uint32_t total = uint32_t(g.planes * g.h * g.w);
  const uint32_t w = uint32_t(g.w), oh = uint32_t(g.oh), ow = uint32_t(g.ow);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += gridDim.x * blockDim.x) {
    const uint32_t q = plane.div(i), at = i - q * plane.divisor;
    const uint32_t yy = width.div(at), xx = at - yy * w;
    const uint32_t oy = kh.div(yy), ox = kw.div(xx);
    T acc = T(0);
    if (oy < oh && ox < ow) {
      const uint32_t o = (q * oh + oy) * ow + ox;
      if (idx[o] == int64_t(at)) acc += gout[o];
    }
    dx[i] = acc;
  }
  flag_out_of_plane(idx, g, bad);
}

template <class T>
__global__ void avg_pool_backward(const T* gout, T* dx, PoolGeo g) {
  const int64_t total = g.planes * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t xx = i % g.w, yy = i / g.w % g.h, q = i / (g.w * g.h);
    const Range rr = outputs_holding(yy, g.sh, g.ph, g.kh, g.oh);
    const Range rc = outputs_holding(xx, g.sw, g.pw, g.kw, g.ow);
    const T* plane = gout + q * g.oh * g.ow;
    T acc = T(0);
    for (int64_t oy = rr.lo; oy < rr.hi; ++oy) {
      const Window r = window(oy, g.sh, g.ph, g.kh, g.h);
      for (int64_t ox = rc.lo; ox < rc.hi; ++ox) {
        const Window c = window(ox, g.sw, g.pw, g.kw, g.w);
        acc += plane[oy * g.ow + ox] / T(count(g, r, c));
      }
    }
    dx[i] = acc;
  }
}

// Index tensors that max_pool2d wrote, while their storage lives: their
// indices lie in their planes by construction, so max_pool2d_backward on
// them, over a plane of the forward's size, skips the check whose read-back
// synchronises the stream (twice a training step of the CNN: the host
// waited for the GPU there). Indices from anywhere else are checked. Not
// tracked: a later write by another op into that storage (an index outside
// its plane would then drop its gradient instead of raising).
class TrustedIndices {
 public:
  // plane: h * w of the forward's input, which the indices lie within.
  void add(const Tensor& t, int64_t plane) {
    std::lock_guard<std::mutex> lock(mu_);
    while (!entries_.empty() &&
           (entries_.size() >= kMax || entries_.front().data.expired())) {
      entries_.pop_front();
    }
    entries_.push_back({t.data(), t.offset(), t.shape(), t.strides(), plane});
  }
  bool contains(const Tensor& t, int64_t plane) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (e.data.lock() == t.data() && e.offset == t.offset() &&
          e.shape == t.shape() && e.strides == t.strides() &&
          e.plane == plane) {
        return true;
      }
    }
    return false;
  }

 private:
  static constexpr size_t kMax = 64;
  struct Entry {
    std::weak_ptr<BackendData> data;
    int64_t offset;
    Shape shape;
    Strides strides;
    int64_t plane;
  };
  std::mutex mu_;
  std::deque<Entry> entries_;
};

TrustedIndices& trusted_indices() {
  static TrustedIndices t;
  return t;
}

}  // namespace

void Backend::pool2d(PoolOp op, const Tensor& x_in, const Tensor* indices,
                     const Pool2dParams& p, Tensor& out, Tensor* out_indices) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  const bool backward =
      op == PoolOp::max_pool2d_backward || op == PoolOp::avg_pool2d_backward;
  const Shape& in = backward ? out.shape() : x_in.shape();
  const Shape& pooled = backward ? x_in.shape() : out.shape();
  const PoolGeo g{in[0] * in[1], in[2],        in[3],
                  pooled[2],     pooled[3],    p.kernel[0],
                  p.kernel[1],   p.stride[0],  p.stride[1],
                  p.padding[0],  p.padding[1], p.count_include_pad};
  if (out.numel() == 0) return;
  const Tensor x = contiguous(*this, x_in);
  Tensor ic;
  if (indices != nullptr) ic = contiguous(*this, *indices);
  const int64_t work = backward ? g.planes * g.h * g.w : g.planes * g.oh * g.ow;
  const unsigned grid = grid_for(work, 256);
  bool check_flag = false;
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* px = data_ptr<T>(x);
      T* py = data_ptr<T>(out);
      switch (op) {
        case PoolOp::max_pool2d:
          max_pool<T><<<grid, 256, 0, ctx.stream>>>(
              px, py, out_indices ? data_ptr<int64_t>(*out_indices) : nullptr,
              g);
          break;
        case PoolOp::avg_pool2d:
          avg_pool<T><<<grid, 256, 0, ctx.stream>>>(px, py, g);
          break;
        case PoolOp::max_pool2d_backward:
          check_flag = !trusted_indices().contains(*indices, g.h * g.w);
          if (g.kh == g.sh && g.kw == g.sw && g.ph == 0 && g.pw == 0 &&
              g.planes * g.h * g.w < (int64_t(1) << 31) &&
              g.planes * g.oh * g.ow < (int64_t(1) << 31)) {
            max_pool_backward_tiles<T><<<grid, 256, 0, ctx.stream>>>(
                px, data_ptr<int64_t>(ic), py, g,
                IntDivider(uint32_t(g.h * g.w)), IntDivider(uint32_t(g.w)),
                IntDivider(uint32_t(g.kh)), IntDivider(uint32_t(g.kw)),
                check_flag ? ctx.flag : nullptr);
          } else {
            max_pool_backward<T>
                <<<grid, 256, 0, ctx.stream>>>(px, data_ptr<int64_t>(ic), py, g,
                                               check_flag ? ctx.flag : nullptr);
          }
          break;
        case PoolOp::avg_pool2d_backward:
          avg_pool_backward<T><<<grid, 256, 0, ctx.stream>>>(px, py, g);
          break;
      }
      check_launch(nascent::name(op));
    } else {
      unsupported(nascent::name(op), out);
    }
  });
  if (op == PoolOp::max_pool2d && out_indices != nullptr) {
    trusted_indices().add(*out_indices, g.h * g.w);
  }
  if (check_flag) {
    // A bad index is a user error the CPU raises; reading the flag back is
    // the price (one small copy and a wait on this stream).
    int bad = 0;
    check(cudaMemcpyAsync(&bad, ctx.flag, sizeof(int), cudaMemcpyDeviceToHost,
                          ctx.stream),
          "cudaMemcpyAsync (max_pool2d_backward)");
    check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
    if (bad != 0) {
      check(cudaMemsetAsync(ctx.flag, 0, sizeof(int), ctx.stream),
            "cudaMemsetAsync");
      throw ValueError(
          "max_pool2d_backward: an index lies outside its plane of " +
          std::to_string(g.h) + "x" + std::to_string(g.w) + " = " +
          std::to_string(g.h * g.w) +
          " elements (indices must come from max_pool2d_with_indices on "
          "input shape " +
          to_string(in) + ")");
    }
  }
}

}  // namespace nascent::cuda
