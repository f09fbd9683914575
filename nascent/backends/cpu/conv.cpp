// conv2d and its two gradients on the CPU, NCHW, f32 and f64.
//
// Four paths:
// - Winograd F(2x2, 3x3) for 3x3 stride-1 convs with enough channels
//   (conv/winograd_simd.cpp): 4/9 of the multiplies, in GEMMs over many tiles.
// - im2col + GEMM (the general case). Per image and group, the output
//   [Og, OH*OW] is W_g [Og, K] times col [K, OH*OW], K = Cg*KH*KW. col is
//   built for a block of output rows at a time (at most kColBytes), so large
//   images never need a [K, OH*OW] buffer, let alone one for the batch.
// - 1x1, stride 1, no padding: the input plane already is col; no copy.
// - one input channel per group (depthwise, and the usual first layer with
//   C = 1): direct SIMD kernels on zero-padded planes (conv/direct_simd.cpp),
//   since a GEMM with K = KH*KW is all overhead.
//
// Threads: with enough images each task takes whole images and runs GEMM
// serially (no sharing, no false sharing of outputs); with few images the
// images run one after another and GEMM, im2col and col2im split the work
// of each one. The thread pool runs nested parallel_for calls serially, so
// the same per-image code serves both.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/balanced.h"
#include "nascent/backends/cpu/conv/direct.h"
#include "nascent/backends/cpu/conv/geometry.h"
#include "nascent/backends/cpu/conv/winograd.h"
#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

using conv::Geometry;
using conv::Range;
using conv::valid_outputs;

// Largest im2col block per thread. Big enough that GEMM sees long rows, small
// enough to stay in L2 while GEMM packs it.
constexpr int64_t kColBytes = int64_t(1) << 20;

Geometry make_geometry(const Shape& x, const Shape& w, const Shape& out,
                       const Conv2dParams& p) {
  return Geometry{x[0],         x[1],          x[2],          x[3],
                  w[0],         w[2],          w[3],          out[2],
                  out[3],       p.stride[0],   p.stride[1],   p.padding[0],
                  p.padding[1], p.dilation[0], p.dilation[1], p.groups};
}

void gemm(const GemmArgs& g, const float* a, const float* b, float* c) {
  gemm_f32(g, a, b, c);
}
void gemm(const GemmArgs& g, const double* a, const double* b, double* c) {
  gemm_f64(g, a, b, c);
}

// Output rows per im2col block.
int64_t rows_per_block(const Geometry& g, size_t itemsize) {
  int64_t row_bytes = g.k() * g.ow * int64_t(itemsize);
  return std::clamp<int64_t>(kColBytes / std::max<int64_t>(row_bytes, 1), 1,
                             g.oh);
}

// With stride 1 and OW == W ("same" convolutions) the rows of a col row
// and of the input plane line up, so a tap's whole block is one contiguous
// run of the plane: im2col copies it at once and then zeroes the padding
// columns, instead of one short copy per output row.
bool contiguous_taps(const Geometry& g) {
  return g.sh == 1 && g.sw == 1 && g.w == g.ow;
}

// Per kernel column j, the output columns whose input column is inside;
// per kernel row i, the output rows of [r0, r1) whose input row is.
struct TapRanges {
  std::vector<Range> cols, rows;
  TapRanges(const Geometry& g, int64_t r0, int64_t r1) {
    for (int64_t j = 0; j < g.kw; ++j) {
      cols.push_back(valid_outputs(g.w, g.ow, g.sw, g.pw, j * g.dw));
    }
    for (int64_t i = 0; i < g.kh; ++i) {
      const Range rr = valid_outputs(g.h, g.oh, g.sh, g.ph, i * g.dh);
      rows.push_back({std::clamp(rr.lo, r0, r1), std::clamp(rr.hi, r0, r1)});
    }
  }
};

// col[K, (r1 - r0) * OW] of one image and group (x points at its first
// channel) for output rows [r0, r1). Padding reads as zero.
template <class T>
void im2col(const Geometry& g, const T* x, int64_t r0, int64_t r1, T* col) {
  const int64_t cols = (r1 - r0) * g.ow;
  const bool runs = contiguous_taps(g);
  const TapRanges ranges(g, r0, r1);
  auto fill_row = [&](int64_t row) {
    const int64_t j = row % g.kw, i = (row / g.kw) % g.kh;
    const T* plane = x + (row / (g.kw * g.kh)) * g.hw();
    const Range cr = ranges.cols[size_t(j)], rr = ranges.rows[size_t(i)];
    // Output (r, c) is dst[r * OW + c] and reads plane[at + r * SH * W +
    // c * SW] (in bounds for the valid rows and columns).
    T* dst = col + row * cols;
    const int64_t at = (i * g.dh - g.ph) * g.w + j * g.dw - g.pw;
    const int64_t shift = r0 * g.ow;
    std::fill(dst, dst + (rr.lo * g.ow - shift), T(0));
    std::fill(dst + (rr.hi * g.ow - shift), dst + cols, T(0));
    if (rr.lo >= rr.hi) return;
    if (runs) {
      const int64_t first = rr.lo * g.ow + cr.lo;
      const int64_t last = (rr.hi - 1) * g.ow + cr.hi;
      if (first < last) {
        std::memcpy(dst + (first - shift), plane + (at + first),
                    size_t(last - first) * sizeof(T));
      }
      // The run brought neighbouring rows' ends into the padding columns:
      // zero them column by column (a strided loop, where one short fill
      // per row would be a library call per row).
      T* d = dst + (rr.lo * g.ow - shift);
      auto zero_column = [&](int64_t c) {
        for (int64_t r = 0; r < rr.hi - rr.lo; ++r) d[r * g.ow + c] = T(0);
      };
      for (int64_t c = 0; c < cr.lo; ++c) zero_column(c);
      for (int64_t c = cr.hi; c < g.ow; ++c) zero_column(c);
      return;
    }
    for (int64_t r = rr.lo; r < rr.hi; ++r) {
      T* d = dst + (r * g.ow - shift);
      const int64_t s = at + r * g.sh * g.w;
      std::fill(d, d + cr.lo, T(0));
      for (int64_t c = cr.lo; c < cr.hi; ++c) d[c] = plane[s + c * g.sw];
      std::fill(d + cr.hi, d + g.ow, T(0));
    }
  };
  parallel_for(g.k(), std::max<int64_t>(1, 16384 / cols),
               [&](int64_t b, int64_t e) {
                 for (int64_t row = b; row < e; ++row) fill_row(row);
               });
}

// The adjoint of im2col: adds col's entries back to the input positions they
// were read from. Split by channel, since only a channel's own rows of col
// land in its plane. For contiguous taps col's padding entries are zeroed
// first, so that a tap's block adds to the plane as one run.
template <class T>
void col2im(const Geometry& g, T* col, int64_t r0, int64_t r1, T* x) {
  const int64_t cols = (r1 - r0) * g.ow;
  const bool runs = contiguous_taps(g);
  const TapRanges ranges(g, r0, r1);
  auto add_tap = [&](int64_t ci, int64_t i, int64_t j) {
    const Range cr = ranges.cols[size_t(j)], rr = ranges.rows[size_t(i)];
    if (rr.lo >= rr.hi) return;
    // As in im2col: (r, c) is src[r * OW + c - shift] and goes to
    // plane[at + r * SH * W + c * SW].
    T* src = col + ((ci * g.kh + i) * g.kw + j) * cols;
    T* plane = x + ci * g.hw();
    const int64_t at = (i * g.dh - g.ph) * g.w + j * g.dw - g.pw;
    const int64_t shift = r0 * g.ow;
    if (runs) {
      T* s = src + (rr.lo * g.ow - shift);
      auto zero_column = [&](int64_t c) {
        for (int64_t r = 0; r < rr.hi - rr.lo; ++r) s[r * g.ow + c] = T(0);
      };
      for (int64_t c = 0; c < cr.lo; ++c) zero_column(c);
      for (int64_t c = cr.hi; c < g.ow; ++c) zero_column(c);
      const int64_t first = rr.lo * g.ow + cr.lo;
      const int64_t last = (rr.hi - 1) * g.ow + cr.hi;
      T* d = plane + (at + first);
      const T* run = src + (first - shift);
      for (int64_t k = 0; k < last - first; ++k) d[k] += run[k];
      return;
    }
    for (int64_t r = rr.lo; r < rr.hi; ++r) {
      const T* s = src + (r * g.ow - shift);
      const int64_t d = at + r * g.sh * g.w;
      for (int64_t c = cr.lo; c < cr.hi; ++c) plane[d + c * g.sw] += s[c];
    }
  };
  parallel_for(g.cg(), std::max<int64_t>(1, 16384 / (cols * g.kh * g.kw)),
               [&](int64_t b, int64_t e) {
                 for (int64_t ci = b; ci < e; ++ci) {
                   for (int64_t i = 0; i < g.kh; ++i) {
                     for (int64_t j = 0; j < g.kw; ++j) add_tap(ci, i, j);
                   }
                 }
               });
}

// --- im2col + GEMM, one image at a time ------------------------------------

// out = W col (+ bias). With `wb` (the weights [O, K + 1] with the bias as
// an extra last column) col gets a last row of ones and the GEMM adds the
// bias in passing; otherwise the bias is written first and accumulated
// onto (an extra pass over the output, and a read of it in the GEMM).
template <class T>
void forward_image(const Geometry& g, const T* x, const T* w, const T* bias,
                   const T* wb, T* out) {
  const int64_t k = g.k(), og = g.og(), ohw = g.ohw();
  const int64_t kb = wb != nullptr ? k + 1 : k;
  const int64_t block = g.pointwise() ? g.oh : rows_per_block(g, sizeof(T));
  T* col =
      g.pointwise() ? nullptr : conv::scratch<T>(0, size_t(kb * block * g.ow));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const T* xg = x + grp * g.cg() * g.hw();
    T* outg = out + grp * og * ohw;
    for (int64_t r0 = 0; r0 < g.oh; r0 += block) {
      const int64_t r1 = std::min(g.oh, r0 + block);
      const int64_t cols = (r1 - r0) * g.ow;
      T* c = outg + r0 * g.ow;
      if (bias != nullptr && wb == nullptr) {
        for (int64_t m = 0; m < og; ++m) {
          std::fill(c + m * ohw, c + m * ohw + cols, bias[grp * og + m]);
        }
      }
      const T* b = xg;  // Pointwise: the input rows are col.
      int64_t rsb = g.hw();
      if (!g.pointwise()) {
        im2col(g, xg, r0, r1, col);
        if (wb != nullptr) std::fill(col + k * cols, col + kb * cols, T(1));
        b = col;
        rsb = cols;
      }
      GemmArgs args;
      args.m = og, args.n = cols, args.k = kb;
      args.rsa = kb, args.csa = 1, args.rsb = rsb, args.csb = 1;
      args.ldc = ohw, args.accumulate = bias != nullptr && wb == nullptr;
      gemm(args, (wb != nullptr ? wb : w) + grp * og * kb, b, c);
    }
  }
}

// grad_x = col2im(W_g^T grad_out_g), block by block; for 1x1 convs the
// GEMM writes grad_x itself.
template <class T>
void backward_input_image(const Geometry& g, const T* gout, const T* w, T* dx) {
  const int64_t k = g.k(), og = g.og(), ohw = g.ohw();
  if (!g.pointwise()) std::fill(dx, dx + g.c * g.hw(), T(0));
  const int64_t block = g.pointwise() ? g.oh : rows_per_block(g, sizeof(T));
  T* col =
      g.pointwise() ? nullptr : conv::scratch<T>(0, size_t(k * block * g.ow));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const T* gg = gout + grp * og * ohw;
    T* dxg = dx + grp * g.cg() * g.hw();
    for (int64_t r0 = 0; r0 < g.oh; r0 += block) {
      const int64_t r1 = std::min(g.oh, r0 + block);
      const int64_t cols = (r1 - r0) * g.ow;
      GemmArgs args;
      args.m = k, args.n = cols, args.k = og;
      args.rsa = 1, args.csa = k, args.rsb = ohw, args.csb = 1;
      args.ldc = g.pointwise() ? g.hw() : cols;
      gemm(args, w + grp * og * k, gg + r0 * g.ow, g.pointwise() ? dxg : col);
      if (!g.pointwise()) col2im(g, col, r0, r1, dxg);
    }
  }
}

// dw += grad_out_g col^T for one image; dw must be initialised.
template <class T>
void backward_weight_image(const Geometry& g, const T* x, const T* gout,
                           T* dw) {
  const int64_t k = g.k(), og = g.og(), ohw = g.ohw();
  const int64_t block = g.pointwise() ? g.oh : rows_per_block(g, sizeof(T));
  T* col =
      g.pointwise() ? nullptr : conv::scratch<T>(0, size_t(k * block * g.ow));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const T* xg = x + grp * g.cg() * g.hw();
    const T* gg = gout + grp * og * ohw;
    for (int64_t r0 = 0; r0 < g.oh; r0 += block) {
      const int64_t r1 = std::min(g.oh, r0 + block);
      const int64_t cols = (r1 - r0) * g.ow;
      const T* b = xg;
      int64_t csb = g.hw();
      if (!g.pointwise()) {
        im2col(g, xg, r0, r1, col);
        b = col;
        csb = cols;
      }
      GemmArgs args;
      args.m = og, args.n = k, args.k = cols;
      args.rsa = ohw, args.csa = 1, args.rsb = 1, args.csb = csb;
      args.ldc = k, args.accumulate = true;
      gemm(args, gg + r0 * g.ow, b, dw + grp * og * k);
    }
  }
}

// --- im2col + GEMM over the batch -------------------------------------------

// Whole images per task (balanced_for) when there are enough to balance;
// else image after image, each split across the threads.
bool split_by_image(int64_t images) {
  const int64_t threads = num_threads();
  return images >= 4 * threads || images % threads == 0;
}

void for_each_image(int64_t images, const std::function<void(int64_t)>& fn) {
  if (split_by_image(images)) {
    balanced_for(images, 1, [&](int64_t s, int64_t e) {
      for (int64_t n = s; n < e; ++n) fn(n);
    });
  } else {
    for (int64_t n = 0; n < images; ++n) fn(n);
  }
}

// Winograd F(2x2, 3x3) for 3x3, stride 1, undilated convs with enough
// channels to pay for the transforms, while its per-thread buffers (16
// transforms of an image's tiles, in and out) stay moderate.
bool winograd_applies(const Geometry& g, size_t itemsize) {
  const int64_t tiles = (g.oh + 1) / 2 * ((g.ow + 1) / 2);
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
         g.dw == 1 && g.cg() >= 16 && g.og() >= 16 &&
         16 * (g.cg() + g.og()) * tiles * int64_t(itemsize) <=
             (int64_t(8) << 20);
}

// With stride 1 the input gradient is also a forward convolution of
// grad_out with the flipped kernel, input and output channels swapped, and
// padding (KH - 1) * DH - PH (when that is not negative).
Geometry flipped_geometry(const Geometry& g) {
  Geometry f = g;  // Stride 1 and dilation stay.
  f.c = g.o, f.h = g.oh, f.w = g.ow;
  f.o = g.c, f.oh = g.h, f.ow = g.w;
  f.ph = (g.kh - 1) * g.dh - g.ph, f.pw = (g.kw - 1) * g.dw - g.pw;
  return f;
}

// Whether to take that way. It can run as Winograd; otherwise both ways do
// the same GEMM FLOPs and what differs is the column buffer, Og * KH * KW
// rows of H * W for the forward against Cg * KH * KW rows of OH * OW for
// col2im's, written, packed by the GEMM and read again: the forward wins
// when the layer narrows (Og < Cg).
bool flip_backward_input(const Geometry& g, size_t itemsize) {
  if (g.sh != 1 || g.sw != 1 || g.ph > (g.kh - 1) * g.dh ||
      g.pw > (g.kw - 1) * g.dw) {
    return false;
  }
  return g.og() < g.cg() || winograd_applies(flipped_geometry(g), itemsize);
}

template <class T>
void backward_input_as_forward(const Geometry& g, const T* gout, const T* w,
                               T* dx) {
  const int64_t og = g.og(), cg = g.cg(), taps = g.kh * g.kw;
  // flipped[grp * Cg + ci, m, i, j] = w[grp * Og + m, ci, KH-1-i, KW-1-j].
  std::vector<T> flipped(size_t(g.o * cg * taps));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    for (int64_t m = 0; m < og; ++m) {
      for (int64_t ci = 0; ci < cg; ++ci) {
        const T* src = w + ((grp * og + m) * cg + ci) * taps;
        T* dst = flipped.data() + ((grp * cg + ci) * og + m) * taps;
        for (int64_t t = 0; t < taps; ++t) dst[taps - 1 - t] = src[t];
      }
    }
  }
  const Geometry f = flipped_geometry(g);
  if (winograd_applies(f, sizeof(T))) {
    winograd_conv3x3(f, gout, flipped.data(), static_cast<const T*>(nullptr),
                     dx);
    return;
  }
  const int64_t x_size = g.c * g.hw(), y_size = g.o * g.ohw();
  for_each_image(g.n, [&](int64_t n) {
    forward_image(f, gout + n * y_size, flipped.data(),
                  static_cast<const T*>(nullptr),
                  static_cast<const T*>(nullptr), dx + n * x_size);
  });
}

template <class T>
void conv_gemm(ConvOp op, const Geometry& g, const T* a, const T* b,
               const T* bias, T* out) {
  const int64_t x_size = g.c * g.hw(), y_size = g.o * g.ohw();
  switch (op) {
    case ConvOp::conv2d: {
      if (winograd_applies(g, sizeof(T))) {
        winograd_conv3x3(g, a, b, bias, out);
        break;
      }
      std::vector<T> wb;  // Weights with the bias as a last column.
      if (bias != nullptr && !g.pointwise()) {
        const int64_t k = g.k();
        wb.resize(size_t(g.o * (k + 1)));
        for (int64_t oc = 0; oc < g.o; ++oc) {
          std::copy(b + oc * k, b + (oc + 1) * k, wb.begin() + oc * (k + 1));
          wb[size_t(oc * (k + 1) + k)] = bias[oc];
        }
      }
      const T* wbp = wb.empty() ? nullptr : wb.data();
      for_each_image(g.n, [&](int64_t n) {
        forward_image(g, a + n * x_size, b, bias, wbp, out + n * y_size);
      });
      break;
    }
    case ConvOp::conv2d_backward_input:
      if (flip_backward_input(g, sizeof(T))) {
        backward_input_as_forward(g, a, b, out);
        break;
      }
      for_each_image(g.n, [&](int64_t n) {
        backward_input_image(g, a + n * y_size, b, out + n * x_size);
      });
      break;
    case ConvOp::conv2d_backward_weight: {
      const int64_t w_size = g.o * g.k();
      std::fill(out, out + w_size, T(0));
      if (!split_by_image(g.n)) {
        for (int64_t n = 0; n < g.n; ++n) {
          backward_weight_image(g, a + n * x_size, b + n * y_size, out);
        }
        break;
      }
      // Tasks as balanced_for cuts them; each sums its images into its own
      // buffer (the first into out), and the buffers are added at the end.
      const int64_t threads = num_threads();
      const int64_t tasks =
          threads <= 1 ? 1 : std::min<int64_t>(4 * threads, g.n);
      std::vector<T> partial(size_t((tasks - 1) * w_size), T(0));
      parallel_tasks(int(tasks), [&](int t) {
        T* dw = t == 0 ? out : partial.data() + (t - 1) * w_size;
        for (int64_t n = g.n * t / tasks; n < g.n * (t + 1) / tasks; ++n) {
          backward_weight_image(g, a + n * x_size, b + n * y_size, dw);
        }
      });
      for (int64_t t = 1; t < tasks; ++t) {
        const T* p = partial.data() + (t - 1) * w_size;
        for (int64_t i = 0; i < w_size; ++i) out[i] += p[i];
      }
      break;
    }
  }
}

}  // namespace

void Backend::conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                     const Tensor* bias, const Conv2dParams& p, Tensor& out) {
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  const Tensor biasc = bias != nullptr ? bias->contiguous() : Tensor();
  Geometry g{};
  switch (op) {
    case ConvOp::conv2d:
      g = make_geometry(a.shape(), b.shape(), out.shape(), p);
      break;
    case ConvOp::conv2d_backward_input:
      g = make_geometry(out.shape(), b.shape(), a.shape(), p);
      break;
    case ConvOp::conv2d_backward_weight:
      g = make_geometry(a.shape(), out.shape(), b.shape(), p);
      break;
  }
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* bias_ptr = bias != nullptr ? data_ptr<T>(biasc) : nullptr;
      if (g.cg() == 1) {
        conv_direct(op, g, data_ptr<T>(ac), data_ptr<T>(bc), bias_ptr,
                    data_ptr<T>(out));
      } else {
        conv_gemm(op, g, data_ptr<T>(ac), data_ptr<T>(bc), bias_ptr,
                  data_ptr<T>(out));
      }
    } else {
      throw BackendError(fmt::format("cpu: {} takes f32 or f64, got {}",
                                     nascent::name(op), out.to_string()));
    }
  });
}

}  // namespace nascent::cpu
