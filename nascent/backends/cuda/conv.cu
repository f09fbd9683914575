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
// The layout kernels (im2col, col2im and the permutes) give each thread one
// position of the image, channel or tap and a few images, so the index
// arithmetic, 32-bit with fast division unless a size needs 64 bits, is done
// once a thread; a warp touches consecutive pixels. With 64-bit divisions
// for every element they were what cost at the CNN's batch 256
// (bench/NOTES.md).
//
// f32 takes cuDNN (conv_dnn.cpp) instead when the build found it, the user
// asked for it (NASCENT_CUDA_CONV=cudnn) and it has an algorithm for the
// shape.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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

// n / d by a plain division: the fallback when an index may not fit in 32
// bits (IntDivider's multiply-and-shift needs n < 2^31).
struct WideDivider {
  uint64_t divisor = 1;
  WideDivider() = default;
  explicit WideDivider(uint64_t d) : divisor(d) {}
  NASCENT_HD uint64_t div(uint64_t n) const { return n / divisor; }
};

// The divisors of the kernels' index arithmetic, computed once a call. I is
// the unsigned index type: uint32_t (fast division) when every index of the
// call fits in 31 bits, else uint64_t.
template <class I>
struct Divs {
  using Div =
      std::conditional_t<std::is_same_v<I, uint32_t>, IntDivider, WideDivider>;
  Div p, ow, kw, kh, w, h, sh, sw;
  explicit Divs(const Geo& g) {
    auto d = [](int64_t v) { return Div(I(std::max<int64_t>(v, 1))); };
    p = d(g.p());
    ow = d(g.ow);
    kw = d(g.kw);
    kh = d(g.kh);
    w = d(g.w);
    h = d(g.h);
    sh = d(g.sh);
    sw = d(g.sw);
  }
};

// Images a thread handles: its index arithmetic is done once for all of
// them, and their loads are independent.
constexpr int kImgs = 4;
constexpr int kThreads = 256;

// Grid for kernels whose threads own one of `items` positions (x) and loop
// over the chunk's images kImgs at a time (y).
dim3 image_grid(int64_t items, int64_t nb) {
  return dim3(
      grid_for(items, kThreads),
      unsigned(std::clamp<int64_t>((nb + kImgs - 1) / kImgs, 1, 65535)));
}

// col[row][img][pix] = x[n0 + img][c][y][x] (0 in the padding), where row is
// (c, kh, kw) and pix is (oy, ox). A thread owns one (row, pix) for kImgs
// images; a warp's stores are consecutive pixels.
template <class T, class I>
__global__ void im2col(const T* x, T* col, Geo g, Divs<I> d, int64_t n0_in,
                       int64_t nb_in) {
  using S = std::make_signed_t<I>;
  const I p = I(g.p()), nb = I(nb_in), n0 = I(n0_in);
  const I hw = I(g.h * g.w), chw = I(g.c) * hw;
  const I items = I(g.c * g.kh * g.kw) * p;
  for (I t = I(blockIdx.x) * blockDim.x + threadIdx.x; t < items;
       t += I(gridDim.x) * blockDim.x) {
    const I row = d.p.div(t), pix = t - row * p;
    const I oy = d.ow.div(pix), ox = pix - oy * I(g.ow);
    const I r1 = d.kw.div(row), kw = row - r1 * I(g.kw);
    const I c = d.kh.div(r1), kh = r1 - c * I(g.kh);
    const S y = S(oy) * S(g.sh) - S(g.ph) + S(kh) * S(g.dh);
    const S xx = S(ox) * S(g.sw) - S(g.pw) + S(kw) * S(g.dw);
    const bool inside = y >= 0 && y < S(g.h) && xx >= 0 && xx < S(g.w);
    const T* src =
        x + (inside ? n0 * chw + c * hw + I(y) * I(g.w) + I(xx) : I(0));
    T* dst = col + row * nb * p + pix;
    for (I i0 = I(blockIdx.y) * kImgs; i0 < nb; i0 += I(gridDim.y) * kImgs) {
      T v[kImgs];
#pragma unroll
      for (int j = 0; j < kImgs; ++j) {
        v[j] = inside && i0 + j < nb ? src[(i0 + j) * chw] : T(0);
      }
#pragma unroll
      for (int j = 0; j < kImgs; ++j) {
        if (i0 + j < nb) dst[(i0 + j) * p] = v[j];
      }
    }
  }
}

// grad_input[n0 + img][c][y][x] = sum of the column entries that read it (a
// gather: no atomics, and the sum's order does not depend on timing). A
// thread owns one (c, y, x) for kImgs images, so each tap's position is
// worked out once for all of them.
template <class T, class I>
__global__ void col2im(const T* col, T* dx, Geo g, Divs<I> d, int64_t n0_in,
                       int64_t nb_in) {
  using S = std::make_signed_t<I>;
  const I p = I(g.p()), nb = I(nb_in), n0 = I(n0_in);
  const I chw = I(g.c * g.h * g.w);
  for (I t = I(blockIdx.x) * blockDim.x + threadIdx.x; t < chw;
       t += I(gridDim.x) * blockDim.x) {
    const I r = d.w.div(t), xx = t - r * I(g.w);
    const I c = d.h.div(r), y = r - c * I(g.h);
    for (I i0 = I(blockIdx.y) * kImgs; i0 < nb; i0 += I(gridDim.y) * kImgs) {
      T acc[kImgs];
#pragma unroll
      for (int j = 0; j < kImgs; ++j) acc[j] = T(0);
      for (I kh = 0; kh < I(g.kh); ++kh) {
        const S ty = S(y) + S(g.ph) - S(kh) * S(g.dh);
        if (ty < 0) continue;
        const I oy = d.sh.div(I(ty));
        if (oy * I(g.sh) != I(ty) || oy >= I(g.oh)) continue;
        for (I kw = 0; kw < I(g.kw); ++kw) {
          const S tx = S(xx) + S(g.pw) - S(kw) * S(g.dw);
          if (tx < 0) continue;
          const I ox = d.sw.div(I(tx));
          if (ox * I(g.sw) != I(tx) || ox >= I(g.ow)) continue;
          const I row = (c * I(g.kh) + kh) * I(g.kw) + kw;
          const T* src = col + (row * nb + i0) * p + oy * I(g.ow) + ox;
#pragma unroll
          for (int j = 0; j < kImgs; ++j) {
            if (i0 + j < nb) acc[j] += src[I(j) * p];
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kImgs; ++j) {
        if (i0 + j < nb) dx[(n0 + i0 + j) * chw + t] = acc[j];
      }
    }
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

// Between NCHW images and the GEMMs' [O][images][P] layout of a chunk:
// kToNchw: nchw[n0 + img][o][p] = rows[o][img][p] (+ bias[o]), after the
// forward's GEMMs; else rows[o][img][p] = nchw[n0 + img][o][p], grad_out
// before the gradients' GEMMs. A thread owns one (o, p) for kImgs images.
template <class T, class I, bool kToNchw>
__global__ void permute_images(const T* in, T* out, const T* bias, Geo g,
                               Divs<I> d, int64_t n0_in, int64_t nb_in) {
  const I p = I(g.p()), nb = I(nb_in), n0 = I(n0_in);
  const I op = I(g.o) * p;
  const I in_step = kToNchw ? p : op, out_step = kToNchw ? op : p;
  for (I t = I(blockIdx.x) * blockDim.x + threadIdx.x; t < op;
       t += I(gridDim.x) * blockDim.x) {
    const I o = d.p.div(t), pix = t - o * p;
    const I at_rows = o * nb * p + pix, at_nchw = n0 * op + t;
    const T* src = in + (kToNchw ? at_rows : at_nchw);
    T* dst = out + (kToNchw ? at_nchw : at_rows);
    const bool has_bias = kToNchw && bias != nullptr;
    const T b = has_bias ? bias[o] : T(0);
    for (I i0 = I(blockIdx.y) * kImgs; i0 < nb; i0 += I(gridDim.y) * kImgs) {
      T v[kImgs];
#pragma unroll
      for (int j = 0; j < kImgs; ++j) {
        if (i0 + j < nb) v[j] = src[(i0 + j) * in_step];
      }
#pragma unroll
      for (int j = 0; j < kImgs; ++j) {
        if (i0 + j < nb) dst[(i0 + j) * out_step] = has_bias ? v[j] + b : v[j];
      }
    }
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

// Whether every index of the call (inputs, outputs, the column buffer and
// the [O][images][P] copies, and the kernels' signed coordinates) fits in 31
// bits, so the kernels can take 32-bit arithmetic and fast division.
bool fits32(const Geo& g, int64_t nb_max) {
  const int64_t lim = INT32_MAX;
  return g.n * g.c * g.h * g.w <= lim && g.n * g.o * g.p() <= lim &&
         g.c * g.kh * g.kw * nb_max * g.p() <= lim &&
         g.o * nb_max * g.p() <= lim &&
         g.oh * g.sh + g.kh * g.dh + g.ph + g.h <= lim &&
         g.ow * g.sw + g.kw * g.dw + g.pw + g.w <= lim;
}

template <class T, class I>
void im2col_gemm(Backend& backend, Context& ctx, ConvOp op, const Tensor& a,
                 const Tensor& b, const Tensor* bias, const Geo& g,
                 int64_t nb_max, Tensor& out) {
  const DType dt = out.dtype();
  const int64_t K = g.k(), P = g.p(), Og = g.og(), G = g.groups;
  const Divs<I> d(g);
  Tensor col = scratch(backend, {g.c * g.kh * g.kw, nb_max, P}, dt);
  T* pc = data_ptr<T>(col);
  const int64_t rows = g.c * g.kh * g.kw;
  switch (op) {
    case ConvOp::conv2d: {
      const T* px = data_ptr<T>(a);
      const T* pw = data_ptr<T>(b);
      T* py = data_ptr<T>(out);
      // One GEMM per group over all the chunk's pixels, into
      // [O][images][P] (timed the same as a batch of per-image products on
      // the H200, bench/NOTES.md).
      Tensor t = scratch(backend, {g.o, nb_max, P}, dt);
      T* pt = data_ptr<T>(t);
      const T* pb = bias != nullptr ? data_ptr<T>(*bias) : nullptr;
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        im2col<T, I><<<image_grid(rows * P, nb), kThreads, 0, ctx.stream>>>(
            px, pc, g, d, n0, nb);
        check_launch("conv2d");
        for (int64_t grp = 0; grp < G; ++grp) {
          MatrixRef w{pw + grp * Og * K, K, 1, 0};
          MatrixRef cm{pc + grp * K * nb * P, nb * P, 1, 0};
          gemm(ctx, dt, 1, Og, nb * P, K, w, cm, pt + grp * Og * nb * P, nb * P,
               0);
        }
        permute_images<T, I, true>
            <<<image_grid(g.o * P, nb), kThreads, 0, ctx.stream>>>(
                pt, py, pb, g, d, n0, nb);
        check_launch("conv2d");
      }
      return;
    }
    case ConvOp::conv2d_backward_input: {
      const T* pg = data_ptr<T>(a);
      const T* pw = data_ptr<T>(b);
      T* pdx = data_ptr<T>(out);
      Tensor gperm = scratch(backend, {g.o, nb_max, P}, dt);
      T* pgp = data_ptr<T>(gperm);
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        // grad_out of the chunk as [O][images][P]: one GEMM per group.
        permute_images<T, I, false>
            <<<image_grid(g.o * P, nb), kThreads, 0, ctx.stream>>>(
                pg, pgp, nullptr, g, d, n0, nb);
        check_launch("conv2d_backward_input");
        for (int64_t grp = 0; grp < G; ++grp) {
          // W_g^T [K, Og]: element (q, o) at o * K + q.
          MatrixRef wt{pw + grp * Og * K, 1, K, 0};
          MatrixRef go{pgp + grp * Og * nb * P, nb * P, 1, 0};
          gemm(ctx, dt, 1, K, nb * P, Og, wt, go, pc + grp * K * nb * P, nb * P,
               0);
        }
        col2im<T, I>
            <<<image_grid(g.c * g.h * g.w, nb), kThreads, 0, ctx.stream>>>(
                pc, pdx, g, d, n0, nb);
        check_launch("conv2d_backward_input");
      }
      return;
    }
    case ConvOp::conv2d_backward_weight: {
      const T* px = data_ptr<T>(a);
      const T* pg = data_ptr<T>(b);
      T* pdw = data_ptr<T>(out);
      Tensor gperm = scratch(backend, {g.o, nb_max, P}, dt);
      T* pgp = data_ptr<T>(gperm);
      for (int64_t n0 = 0; n0 < g.n; n0 += nb_max) {
        const int64_t nb = std::min(nb_max, g.n - n0);
        im2col<T, I><<<image_grid(rows * P, nb), kThreads, 0, ctx.stream>>>(
            px, pc, g, d, n0, nb);
        check_launch("conv2d_backward_weight");
        // grad_out of the chunk as [O][images][P], so each group's rows are
        // one matrix over all the chunk's pixels.
        permute_images<T, I, false>
            <<<image_grid(g.o * P, nb), kThreads, 0, ctx.stream>>>(
                pg, pgp, nullptr, g, d, n0, nb);
        check_launch("conv2d_backward_weight");
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
          sum_slices<T>
              <<<grid_for(Og * K, kThreads), kThreads, 0, ctx.stream>>>(
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

// NASCENT_CUDA_CONV=im2col64 takes the 64-bit index path whatever the
// sizes, so tests can check the fallback that only huge tensors need.
bool wide_forced() {
  static const bool on = [] {
    const char* v = std::getenv("NASCENT_CUDA_CONV");
    return v != nullptr && std::strcmp(v, "im2col64") == 0;
  }();
  return on;
}

template <class T>
void conv_typed(Backend& backend, Context& ctx, ConvOp op, const Tensor& a,
                const Tensor& b, const Tensor* bias, const Geo& g,
                Tensor& out) {
  const ConvShape s{g.n,  g.c,  g.h,  g.w,  g.o,  g.kh, g.kw, g.oh,
                    g.ow, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups};
  if (dnn_conv2d(backend, ctx, op, a, b, s, out)) {
    if (op == ConvOp::conv2d && bias != nullptr) {
      const int64_t total = g.n * g.o * g.p();
      add_bias<T><<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
          data_ptr<T>(out), data_ptr<T>(*bias), total, g.o, g.p());
      check_launch("conv2d");
    }
    return;
  }
  const int64_t nb_max = chunk_images(g, sizeof(T));
  if (!wide_forced() && fits32(g, nb_max)) {
    im2col_gemm<T, uint32_t>(backend, ctx, op, a, b, bias, g, nb_max, out);
  } else {
    im2col_gemm<T, uint64_t>(backend, ctx, op, a, b, bias, g, nb_max, out);
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
