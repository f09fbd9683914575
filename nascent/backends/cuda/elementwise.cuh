// The element-wise machinery behind unary, binary, copy and where: a
// vectorised kernel for the flat case (every operand contiguous, or a
// broadcast scalar, and 16-byte aligned) and a strided kernel for the rest.
//
// The flat kernel moves 16 bytes per access and keeps kUnroll accesses of
// each operand in flight per thread before the first use: element-wise ops
// are bound by memory bandwidth, and the loads in flight are what hides
// HBM's latency.
#pragma once

#include "nascent/backends/cuda/strided.cuh"

namespace nascent::cuda {

inline constexpr int kThreads = 256;
inline constexpr int kUnroll = 4;

// Elements per 16-byte access of the widest operand type.
template <class A, class B = A>
inline constexpr int vec_width() {
  constexpr size_t w = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
  return int(16 / w);
}

// --- One input ---------------------------------------------------------------

template <int V, class I, class O, class F>
__global__ void __launch_bounds__(kThreads)
    map1_flat(const I* x, O* y, int64_t n, F f) {
  using VI = Vec<I, V>;
  using VO = Vec<O, V>;
  const int64_t nvec = n / V;
  const int64_t step = int64_t(gridDim.x) * kThreads * kUnroll;
  for (int64_t base = int64_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
       base < nvec; base += step) {
    VI in[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) in[u] = reinterpret_cast<const VI*>(x)[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) {
        VO out;
#pragma unroll
        for (int k = 0; k < V; ++k) out.v[k] = f(in[u].v[k]);
        reinterpret_cast<VO*>(y)[i] = out;
      }
    }
  }
  // The last n % V elements.
  const int64_t t = nvec * V + int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (blockIdx.x == 0 && t < n) y[t] = f(x[t]);
}

template <class I, class O, class F>
__global__ void __launch_bounds__(kThreads)
    map1_strided(const I* x, O* y, StridedParams<2> p, uint32_t n, F f) {
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n;
       i += gridDim.x * kThreads) {
    int64_t off[2];
    strided_offsets(p, i, off);
    y[off[0]] = f(x[off[1]]);
  }
}

inline unsigned flat_grid(int64_t n, int v) {
  return grid_for((n / v + kUnroll - 1) / kUnroll + 1, kThreads);
}

// y = f(x) element-wise; x and y share a shape, any strides.
template <class I, class O, class F>
void map1(Context& ctx, const char* op, const Tensor& x, Tensor& y, F f) {
  if (y.numel() == 0) return;
  I* px = data_ptr<I>(x);
  O* py = data_ptr<O>(y);
  Collapsed<2> c = collapse<2>(y.shape(), {&y.strides(), &x.strides()});
  constexpr int V = vec_width<I, O>();
  if (c.flat({false, false}) && aligned16(px) && aligned16(py)) {
    const int64_t n = c.shape[0];
    map1_flat<V><<<flat_grid(n, V), kThreads, 0, ctx.stream>>>(px, py, n, f);
    check_launch(op);
    return;
  }
  for_each_launch<2>(
      c, {0, 0}, [&](const StridedParams<2>& p, auto b, int64_t n) {
        map1_strided<<<grid_for(n, kThreads, 65536), kThreads, 0, ctx.stream>>>(
            px + b[1], py + b[0], p, uint32_t(n), f);
        check_launch(op);
      });
}

// --- Two inputs
// ----------------------------------------------------------------

template <int V, class I, class O, class F>
__global__ void __launch_bounds__(kThreads)
    map2_flat(const I* a, const I* b, O* y, int64_t n, bool a_scalar,
              bool b_scalar, F f) {
  using VI = Vec<I, V>;
  using VO = Vec<O, V>;
  const int64_t nvec = n / V;
  const int64_t step = int64_t(gridDim.x) * kThreads * kUnroll;
  VI sa, sb;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    sa.v[k] = a[0];
    sb.v[k] = b[0];
  }
  for (int64_t base = int64_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
       base < nvec; base += step) {
    VI va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) {
        va[u] = a_scalar ? sa : reinterpret_cast<const VI*>(a)[i];
        vb[u] = b_scalar ? sb : reinterpret_cast<const VI*>(b)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) {
        VO out;
#pragma unroll
        for (int k = 0; k < V; ++k) out.v[k] = f(va[u].v[k], vb[u].v[k]);
        reinterpret_cast<VO*>(y)[i] = out;
      }
    }
  }
  const int64_t t = nvec * V + int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (blockIdx.x == 0 && t < n) {
    y[t] = f(a_scalar ? a[0] : a[t], b_scalar ? b[0] : b[t]);
  }
}

template <class I, class O, class F>
__global__ void __launch_bounds__(kThreads)
    map2_strided(const I* a, const I* b, O* y, StridedParams<3> p, uint32_t n,
                 F f) {
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n;
       i += gridDim.x * kThreads) {
    int64_t off[3];
    strided_offsets(p, i, off);
    y[off[0]] = f(a[off[1]], b[off[2]]);
  }
}

// y = f(a, b) element-wise; a and b are views of y's shape.
template <class I, class O, class F>
void map2(Context& ctx, const char* op, const Tensor& a, const Tensor& b,
          Tensor& y, F f) {
  if (y.numel() == 0) return;
  const I* pa = data_ptr<I>(a);
  const I* pb = data_ptr<I>(b);
  O* py = data_ptr<O>(y);
  Collapsed<3> c =
      collapse<3>(y.shape(), {&y.strides(), &a.strides(), &b.strides()});
  constexpr int V = vec_width<I, O>();
  if (c.flat({false, true, true})) {
    const bool sa = c.strides[1][0] == 0, sb = c.strides[2][0] == 0;
    if (aligned16(py) && (sa || aligned16(pa)) && (sb || aligned16(pb))) {
      const int64_t n = c.shape[0];
      map2_flat<V><<<flat_grid(n, V), kThreads, 0, ctx.stream>>>(pa, pb, py, n,
                                                                 sa, sb, f);
      check_launch(op);
      return;
    }
  }
  for_each_launch<3>(
      c, {0, 0, 0}, [&](const StridedParams<3>& p, auto o, int64_t n) {
        map2_strided<<<grid_for(n, kThreads, 65536), kThreads, 0, ctx.stream>>>(
            pa + o[1], pb + o[2], py + o[0], p, uint32_t(n), f);
        check_launch(op);
      });
}

}  // namespace nascent::cuda
