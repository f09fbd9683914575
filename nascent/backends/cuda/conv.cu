// conv2d and its two gradients as im2col + cuBLASLt GEMM (f32 and f64; core
// computes f16 and bf16 in f32). NCHW, any stride, padding, dilation and
// groups.
//
// The column buffer holds a chunk of images as [C * KH * KW][images][OH * OW],
// so each group's rows are one block: the forward and the input gradient are
// one GEMM per group and chunk over all the chunk's pixels (through
// [O][images][P] copies of the output or grad_out), and the weight gradient
// one batched GEMM over slices of those pixels, summed. col2im is a gather
// (each input pixel sums its own taps), so no atomics and the result does
// not depend on timing. Chunks keep the buffer under 256 MiB.
//
// f32 takes cuDNN (conv_dnn.cpp) instead when the build found it, the user
// asked for it (NASCENT_CUDA_CONV=cudnn) and it has an algorithm for the
// shape.
#include <algorithm>

#include "nascent/backends/cuda/conv_dnn.h"
#include "nascent/backends/cuda/gemm.h"
#include "nascent/backends/cuda/strided.cuh"

namespace nascent::cuda {

namespace {

constexpr int64_t kColBudget = int64_t(256) << 20;

struct Geo {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  NASCENT_HD int64_t cg() const { return c / groups; }
  NASCENT_HD int64_t og() const { return o / groups; }
  NASCENT_HD int64_t k() const { return cg() * kh * kw; }
  NASCENT_HD int64_t p() const { return oh * ow; }
};

template <class T>
__global__ void im2col(const T* x, T* col, Geo g, int64_t n0, int64_t nb) {
  const int64_t p = g.p();
  const int64_t total = g.c * g.kh * g.kw * nb * p;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pix = i % p;
    const int64_t img = i / p % nb;
    const int64_t row = i / (p * nb);
    const int64_t kw = row % g.kw, kh = row / g.kw % g.kh;
    const int64_t c = row / (g.kw * g.kh);
    const int64_t oy = pix / g.ow, ox = pix % g.ow;
    const int64_t y = oy * g.sh - g.ph + kh * g.dh;
    const int64_t xx = ox * g.sw - g.pw + kw * g.dw;
    T v = T(0);
    if (y >= 0 && y < g.h && xx >= 0 && xx < g.w) {
      v = x[(((n0 + img) * g.c + c) * g.h + y) * g.w + xx];
    }
    col[i] = v;
  }
}

// grad_input[n0 + img][c][y][x] = sum of the column entries that read it.
template <class T>
__global__ void col2im(const T* col, T* dx, Geo g, int64_t n0, int64_t nb) {
  const int64_t p = g.p();
  const int64_t total = nb * g.c * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t xx = i % g.w, y = i / g.w % g.h;
    const int64_t c = i / (g.w * g.h) % g.c, img = i / (g.w * g.h * g.c);
    T acc = T(0);
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t ty = y + g.ph - kh * g.dh;
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      const int64_t oy = ty / g.sh;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t tx = xx + g.pw - kw * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        const int64_t ox = tx / g.sw;
        const int64_t row = (c * g.kh + kh) * g.kw + kw;
        acc += col[(row * nb + img) * p + oy * g.ow + ox];
      }
    }
    dx[(n0 * g.c) * g.h * g.w + i] = acc;
  }
}

template <class T>
__global__ void add_bias(T* out, const T* bias, int64_t total, int64_t o,
                         int64_t p) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] += bias[i / p % o];
  }
}

// y[n0 + img][o][p] = t[o][img][p] (+ bias[o]): the forward's one GEMM per
// group writes [O][images][P]; this puts it in NCHW order.
template <class T>
__global__ void scatter_images(const T* t, T* y, const T* bias, int64_t o_n,
                               int64_t nb, int64_t p, int64_t n0) {
  const int64_t total = o_n * nb * p;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pix = i % p, img = i / p % nb, o = i / (p * nb);
    T v = t[i];
    if (bias != nullptr) v += bias[o];
    y[((n0 + img) * o_n + o) * p + pix] = v;
  }
}

// dw[q] = sum over s of part[s][q] (+ dw[q] when accumulating): the weight
// gradient's inner dimension split into slices.
template <class T>
__global__ void sum_slices(const T* part, T* dw, int64_t slices, int64_t n,
                           bool accumulate) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    T acc = accumulate ? dw[i] : T(0);
    for (int64_t s = 0; s < slices; ++s) acc += part[s * n + i];
    dw[i] = acc;
  }
}

int64_t chunk_images(const Geo& g, size_t item) {
  const int64_t per = g.c * g.kh * g.kw * g.p() * int64_t(item);
  return std::clamp<int64_t>(kColBudget / std::max<int64_t>(per, 1), 1,
                             std::max<int64_t>(g.n, 1));
}

template <class T>
void conv_typed(Backend& backend, Context& ctx, ConvOp op, const Tensor& a,
                const Tensor& b, const Tensor* bias, const Geo& g,
                Tensor& out) {
  const DType dt = out.dtype();
  const ConvShape s{g.n,  g.c,  g.h,  g.w,  g.o,  g.kh, g.kw, g.oh,
                    g.ow, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups};
  if (dnn_conv2d(backend, ctx, op, a, b, s, out)) {
    if (op == ConvOp::conv2d && bias != nullptr) {
      const int64_t total = g.n * g.o * g.p();
      add_bias<T><<<grid_for(total, 256), 256, 0, ctx.stream>>>(
          data_ptr<T>(out), data_ptr<T>(*bias), total, g.o, g.p());
      check_launch("conv2d");
    }
    return;
  }
  const int64_t K = g.k(), P = g.p(), Og = g.og(), G = g.groups;
  const int64_t nb_max = chunk_images(g, sizeof(T));
  Tensor col = scratch(backend, {g.c * g.kh * g.kw, nb_max, P}, dt);
  T* pc = data_ptr<T>(col);
  const unsigned threads = 256;
  switch (op) {
    case ConvOp::conv2d: {
      const T* px = data_ptr<T>(a);
      const T* pw = data_ptr<T>(b);
      T* py = data_ptr<T>(out);
      // One GEMM per group over all the chunk's pixels, into
      // [O][images][P] (timed the same as a batch of per-image products on
      // the H200: the GEMMs are not what costs here, bench/NOTES.md).
      Tensor t = scratch(backend, {g.o, nb_max, P}, dt);
      T* pt = data_ptr<T>(t);
      const T* pb = bias != nullptr ? data_ptr<T>(*bias) : nullptr;
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        im2col<T><<<grid_for(g.c * g.kh * g.kw * nb * P, threads), threads, 0,
                    ctx.stream>>>(px, pc, g, n0, nb);
        check_launch("conv2d");
        for (int64_t grp = 0; grp < G; ++grp) {
          MatrixRef w{pw + grp * Og * K, K, 1, 0};
          MatrixRef cm{pc + grp * K * nb * P, nb * P, 1, 0};
          gemm(ctx, dt, 1, Og, nb * P, K, w, cm, pt + grp * Og * nb * P, nb * P,
               0);
        }
        scatter_images<T>
            <<<grid_for(g.o * nb * P, threads), threads, 0, ctx.stream>>>(
                pt, py, pb, g.o, nb, P, n0);
        check_launch("conv2d");
      }
      return;
    }
    case ConvOp::conv2d_backward_input: {
      const T* pg = data_ptr<T>(a);
      const T* pw = data_ptr<T>(b);
      T* pdx = data_ptr<T>(out);
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        // grad_out of the chunk as [O][images][P]: one GEMM per group.
        Tensor gperm =
            contiguous(backend, a.narrow(0, n0, nb).permute({1, 0, 2, 3}));
        const T* pgp = data_ptr<T>(gperm);
        for (int64_t grp = 0; grp < G; ++grp) {
          // W_g^T [K, Og]: element (q, o) at o * K + q.
          MatrixRef wt{pw + grp * Og * K, 1, K, 0};
          MatrixRef go{pgp + grp * Og * nb * P, nb * P, 1, 0};
          gemm(ctx, dt, 1, K, nb * P, Og, wt, go, pc + grp * K * nb * P, nb * P,
               0);
        }
        col2im<T><<<grid_for(nb * g.c * g.h * g.w, threads), threads, 0,
                    ctx.stream>>>(pc, pdx, g, n0, nb);
        check_launch("conv2d_backward_input");
      }
      return;
    }
    case ConvOp::conv2d_backward_weight: {
      const T* px = data_ptr<T>(a);
      T* pdw = data_ptr<T>(out);
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        im2col<T><<<grid_for(g.c * g.kh * g.kw * nb * P, threads), threads, 0,
                    ctx.stream>>>(px, pc, g, n0, nb);
        check_launch("conv2d_backward_weight");
        // grad_out of the chunk as [O][images][P], so each group's rows are
        // one matrix over all the chunk's pixels.
        Tensor gperm =
            contiguous(backend, b.narrow(0, n0, nb).permute({1, 0, 2, 3}));
        const T* pgp = data_ptr<T>(gperm);
        // The inner dimension (every pixel of the chunk) is long and the
        // result small: split it into `slices` products of one batched
        // GEMM (more blocks busy), summed by sum_slices; the tail that does
        // not divide evenly accumulates into the first slice.
        const int64_t inner = nb * P;
        const int64_t slices =
            std::clamp<int64_t>(inner / std::max<int64_t>(4 * K, 1024), 1, 64);
        const int64_t len = inner / slices;
        for (int64_t grp = 0; grp < G; ++grp) {
          MatrixRef go{pgp + grp * Og * inner, inner, 1, 0};
          // col_g^T [nb * P, K]: element (j, q) at q * nb * P + j.
          MatrixRef ct{pc + grp * K * inner, 1, inner, 0};
          if (slices == 1) {
            gemm(ctx, dt, 1, Og, K, inner, go, ct, pdw + grp * Og * K, K, 0,
                 n0 == 0 ? 0.0 : 1.0);
            continue;
          }
          Tensor part = scratch(backend, {slices, Og, K}, dt);
          T* pp = data_ptr<T>(part);
          go.bs = len;
          ct.bs = len;
          gemm(ctx, dt, slices, Og, K, len, go, ct, pp, K, Og * K);
          if (slices * len < inner) {
            const int64_t done = slices * len;
            MatrixRef go_t{pgp + grp * Og * inner + done, inner, 1, 0};
            MatrixRef ct_t{pc + grp * K * inner + done, 1, inner, 0};
            gemm(ctx, dt, 1, Og, K, inner - done, go_t, ct_t, pp, K, 0, 1.0);
          }
          sum_slices<T><<<grid_for(Og * K, threads), threads, 0, ctx.stream>>>(
              pp, pdw + grp * Og * K, slices, Og * K, n0 != 0);
          check_launch("conv2d_backward_weight");
        }
      }
      if (g.n == 0) {
        check(cudaMemsetAsync(pdw, 0, size_t(out.numel()) * sizeof(T),
                              ctx.stream),
              "cudaMemsetAsync (conv2d_backward_weight)");
      }
      return;
    }
  }
}

}  // namespace

void Backend::conv2d(ConvOp op, const Tensor& a_in, const Tensor& b_in,
                     const Tensor* bias_in, const Conv2dParams& p,
                     Tensor& out) {
  DeviceGuard guard(ctx_->device);
  if (out.numel() == 0) return;
  const Tensor a = contiguous(*this, a_in);
  const Tensor b = contiguous(*this, b_in);
  Tensor bias;
  if (bias_in != nullptr) bias = contiguous(*this, *bias_in);
  // Shapes by op: (input, weight, output) from the three tensors.
  const Shape& x =
      op == ConvOp::conv2d_backward_input ? out.shape() : a.shape();
  const Shape& w =
      op == ConvOp::conv2d_backward_weight ? out.shape() : b.shape();
  const Shape& y = op == ConvOp::conv2d                  ? out.shape()
                   : op == ConvOp::conv2d_backward_input ? a.shape()
                                                         : b.shape();
  const Geo g{x[0],         x[1],          x[2],          x[3],
              w[0],         w[2],          w[3],          y[2],
              y[3],         p.stride[0],   p.stride[1],   p.padding[0],
              p.padding[1], p.dilation[0], p.dilation[1], p.groups};
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      conv_typed<T>(*this, *ctx_, op, a, b, bias_in ? &bias : nullptr, g, out);
    } else {
      unsupported(nascent::name(op), out);
    }
  });
}

}  // namespace nascent::cuda
