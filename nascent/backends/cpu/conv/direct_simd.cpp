// Direct convolution (see conv/direct.h). The kernels take one padded
// plane and one KH x KW filter: output (r, c) and tap (i, j) meet at padded
// element (r * sh + i * dh) * ld + c * sw + j * dw. Each output row runs in
// SIMD blocks of columns (full, half and quarter vectors, as rows are short)
// with a scalar tail; strides above 2 run scalar.
#include "nascent/backends/cpu/conv/direct.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "nascent/backends/cpu/balanced.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/conv/direct_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "nascent/backends/cpu/simd/image-inl.h"

// This file is compiled once per SIMD target: the shape is defined once.
#ifndef NASCENT_BACKENDS_CPU_CONV_DIRECT_SHAPE_
#define NASCENT_BACKENDS_CPU_CONV_DIRECT_SHAPE_
namespace nascent::cpu {
struct DirectShape {
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t oh, ow;  // Output plane.
  int64_t ld;      // Row stride of the padded input plane.
};
}  // namespace nascent::cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Each output block sums its taps in registers and is stored once.
template <class T>
void Forward(const DirectShape& s, const T* xpad, const T* w, T bias, T* out,
             bool accumulate) {
  for (int64_t r = 0; r < s.oh; ++r) {
    const T* rows = xpad + r * s.sh * s.ld;
    T* orow = out + r * s.ow;
    int64_t c = 0;
#if HWY_TARGET != HWY_SCALAR
    if constexpr (simd::kHasLanes<T>) {
      if (s.sw <= 2) {
        c = simd::for_blocks<T>(0, s.ow, [&](auto d, int64_t c0) {
          auto acc = accumulate ? hn::LoadU(d, orow + c0) : hn::Set(d, bias);
          for (int64_t i = 0; i < s.kh; ++i) {
            const T* row = rows + i * s.dh * s.ld + c0 * s.sw;
            for (int64_t j = 0; j < s.kw; ++j) {
              acc =
                  hn::MulAdd(hn::Set(d, w[i * s.kw + j]),
                             simd::load_strided(d, row + j * s.dw, s.sw), acc);
            }
          }
          hn::StoreU(acc, d, orow + c0);
        });
      }
    }
#endif
    for (; c < s.ow; ++c) {
      T acc = accumulate ? orow[c] : bias;
      for (int64_t i = 0; i < s.kh; ++i) {
        for (int64_t j = 0; j < s.kw; ++j) {
          acc += w[i * s.kw + j] * rows[i * s.dh * s.ld + c * s.sw + j * s.dw];
        }
      }
      orow[c] = acc;
    }
  }
}

// Tap by tap, each a multiply-add of a grad_out row into a row of dxpad
// (vectorised for stride 1; stride 2 would scatter).
template <class T>
void BackwardInput(const DirectShape& s, const T* grad_out, const T* w,
                   T* dxpad) {
  for (int64_t r = 0; r < s.oh; ++r) {
    const T* grow = grad_out + r * s.ow;
    T* rows = dxpad + r * s.sh * s.ld;
    for (int64_t i = 0; i < s.kh; ++i) {
      for (int64_t j = 0; j < s.kw; ++j) {
        const T wv = w[i * s.kw + j];
        T* dst = rows + i * s.dh * s.ld + j * s.dw;
        int64_t c = 0;
#if HWY_TARGET != HWY_SCALAR
        if constexpr (simd::kHasLanes<T>) {
          if (s.sw == 1) {
            c = simd::for_blocks<T>(0, s.ow, [&](auto d, int64_t c0) {
              hn::StoreU(hn::MulAdd(hn::Set(d, wv), hn::LoadU(d, grow + c0),
                                    hn::LoadU(d, dst + c0)),
                         d, dst + c0);
            });
          }
        }
#endif
        for (; c < s.ow; ++c) dst[c * s.sw] += wv * grow[c];
      }
    }
  }
}

// partial[tap, c] += sum over rows of grad_out[r, c] * input[r, c, tap]:
// every (tap, column) is its own running sum, kept in memory, so the
// multiply-adds of a row are independent (one register accumulator per tap
// would chain them on the FMA latency). The caller sums over c at the end.
template <class T>
void BackwardWeight(const DirectShape& s, const T* xpad, const T* grad_out,
                    T* partial) {
  for (int64_t r = 0; r < s.oh; ++r) {
    const T* grow = grad_out + r * s.ow;
    for (int64_t i = 0; i < s.kh; ++i) {
      const T* row = xpad + (r * s.sh + i * s.dh) * s.ld;
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* xrow = row + j * s.dw;
        T* sums = partial + (i * s.kw + j) * s.ow;
        int64_t c = 0;
#if HWY_TARGET != HWY_SCALAR
        if constexpr (simd::kHasLanes<T>) {
          if (s.sw <= 2) {
            c = simd::for_blocks<T>(0, s.ow, [&](auto d, int64_t c0) {
              hn::StoreU(
                  hn::MulAdd(hn::LoadU(d, grow + c0),
                             simd::load_strided(d, xrow + c0 * s.sw, s.sw),
                             hn::LoadU(d, sums + c0)),
                  d, sums + c0);
            });
          }
        }
#endif
        for (; c < s.ow; ++c) sums[c] += grow[c] * xrow[c * s.sw];
      }
    }
  }
}

// 3x3 filters: the nine running sums of a column block stay in registers
// over all rows (nine independent chains hide the FMA latency), and memory
// sees only one read-modify-write of partial per block, not one per row.
template <class T>
void BackwardWeight3x3(const DirectShape& s, const T* xpad, const T* grad_out,
                       T* partial) {
  int64_t c = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    if (s.sw <= 2) {
      c = simd::for_blocks<T>(0, s.ow, [&](auto d, int64_t c0) {
        auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
             a6 = a0, a7 = a0, a8 = a0;
        for (int64_t r = 0; r < s.oh; ++r) {
          const auto g = hn::LoadU(d, grad_out + r * s.ow + c0);
          const T* x0 = xpad + r * s.sh * s.ld + c0 * s.sw;
          const T* x1 = x0 + s.dh * s.ld;
          const T* x2 = x1 + s.dh * s.ld;
          a0 = hn::MulAdd(g, simd::load_strided(d, x0, s.sw), a0);
          a1 = hn::MulAdd(g, simd::load_strided(d, x0 + s.dw, s.sw), a1);
          a2 = hn::MulAdd(g, simd::load_strided(d, x0 + 2 * s.dw, s.sw), a2);
          a3 = hn::MulAdd(g, simd::load_strided(d, x1, s.sw), a3);
          a4 = hn::MulAdd(g, simd::load_strided(d, x1 + s.dw, s.sw), a4);
          a5 = hn::MulAdd(g, simd::load_strided(d, x1 + 2 * s.dw, s.sw), a5);
          a6 = hn::MulAdd(g, simd::load_strided(d, x2, s.sw), a6);
          a7 = hn::MulAdd(g, simd::load_strided(d, x2 + s.dw, s.sw), a7);
          a8 = hn::MulAdd(g, simd::load_strided(d, x2 + 2 * s.dw, s.sw), a8);
        }
        auto add = [&](int64_t t, decltype(a0) a) {
          T* p = partial + t * s.ow + c0;
          hn::StoreU(hn::Add(hn::LoadU(d, p), a), d, p);
        };
        add(0, a0), add(1, a1), add(2, a2), add(3, a3), add(4, a4);
        add(5, a5), add(6, a6), add(7, a7), add(8, a8);
      });
    }
  }
#endif
  for (; c < s.ow; ++c) {
    for (int64_t t = 0; t < 9; ++t) {
      const T* x = xpad + (t / 3) * s.dh * s.ld + (t % 3) * s.dw + c * s.sw;
      T sum = T(0);
      for (int64_t r = 0; r < s.oh; ++r) {
        sum += grad_out[r * s.ow + c] * x[r * s.sh * s.ld];
      }
      partial[t * s.ow + c] += sum;
    }
  }
}

void ForwardF32(const DirectShape& s, const float* xpad, const float* w,
                float bias, float* out, bool accumulate) {
  Forward(s, xpad, w, bias, out, accumulate);
}
void ForwardF64(const DirectShape& s, const double* xpad, const double* w,
                double bias, double* out, bool accumulate) {
  Forward(s, xpad, w, bias, out, accumulate);
}
void BackwardInputF32(const DirectShape& s, const float* grad_out,
                      const float* w, float* dxpad) {
  BackwardInput(s, grad_out, w, dxpad);
}
void BackwardInputF64(const DirectShape& s, const double* grad_out,
                      const double* w, double* dxpad) {
  BackwardInput(s, grad_out, w, dxpad);
}
void BackwardWeightF32(const DirectShape& s, const float* xpad,
                       const float* grad_out, float* partial) {
  if (s.kh == 3 && s.kw == 3)
    return BackwardWeight3x3(s, xpad, grad_out, partial);
  BackwardWeight(s, xpad, grad_out, partial);
}
void BackwardWeightF64(const DirectShape& s, const double* xpad,
                       const double* grad_out, double* partial) {
  if (s.kh == 3 && s.kw == 3)
    return BackwardWeight3x3(s, xpad, grad_out, partial);
  BackwardWeight(s, xpad, grad_out, partial);
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(ForwardF32);
HWY_EXPORT(ForwardF64);
HWY_EXPORT(BackwardInputF32);
HWY_EXPORT(BackwardInputF64);
HWY_EXPORT(BackwardWeightF32);
HWY_EXPORT(BackwardWeightF64);

namespace {

void forward(const DirectShape& s, const float* xpad, const float* w,
             float bias, float* out, bool accumulate = false) {
  HWY_DYNAMIC_DISPATCH(ForwardF32)(s, xpad, w, bias, out, accumulate);
}
void forward(const DirectShape& s, const double* xpad, const double* w,
             double bias, double* out, bool accumulate = false) {
  HWY_DYNAMIC_DISPATCH(ForwardF64)(s, xpad, w, bias, out, accumulate);
}
void backward_input(const DirectShape& s, const float* grad_out, const float* w,
                    float* dxpad) {
  HWY_DYNAMIC_DISPATCH(BackwardInputF32)(s, grad_out, w, dxpad);
}
void backward_input(const DirectShape& s, const double* grad_out,
                    const double* w, double* dxpad) {
  HWY_DYNAMIC_DISPATCH(BackwardInputF64)(s, grad_out, w, dxpad);
}
void backward_weight(const DirectShape& s, const float* xpad,
                     const float* grad_out, float* partial) {
  HWY_DYNAMIC_DISPATCH(BackwardWeightF32)(s, xpad, grad_out, partial);
}
void backward_weight(const DirectShape& s, const double* xpad,
                     const double* grad_out, double* partial) {
  HWY_DYNAMIC_DISPATCH(BackwardWeightF64)(s, xpad, grad_out, partial);
}

using conv::Geometry;

DirectShape direct_shape(const Geometry& g) {
  return {g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow, g.w + 2 * g.pw};
}
int64_t padded_size(const Geometry& g) {
  return (g.h + 2 * g.ph) * (g.w + 2 * g.pw);
}

// The plane x [H, W] inside a zero border of the padding's width.
template <class T>
void pad_plane(const Geometry& g, const T* x, T* xpad) {
  const int64_t ld = g.w + 2 * g.pw;
  std::fill(xpad, xpad + g.ph * ld, T(0));
  for (int64_t ih = 0; ih < g.h; ++ih) {
    T* row = xpad + (ih + g.ph) * ld;
    std::fill(row, row + g.pw, T(0));
    std::memcpy(row + g.pw, x + ih * g.w, size_t(g.w) * sizeof(T));
    std::fill(row + g.pw + g.w, row + ld, T(0));
  }
  std::fill(xpad + (g.h + g.ph) * ld, xpad + padded_size(g), T(0));
}

// With stride 1 the input gradient is itself a correlation: grad_out,
// zero-padded by the dilated kernel's extent less one, with the flipped
// kernel, read at the input's place inside the padding. That runs the
// forward kernel (sums in registers) instead of scattering tap by tap.
template <class T>
void backward_input_flipped(const Geometry& g, const T* gout, const T* w,
                            T* dx) {
  const int64_t og = g.og(), taps = g.kh * g.kw;
  const int64_t eh = (g.kh - 1) * g.dh, ew = (g.kw - 1) * g.dw;
  const int64_t ld = g.ow + 2 * ew, rows = g.oh + 2 * eh;
  // Output (ih, iw) with tap (i', j') reads gpad row ph + ih + i' * dh.
  const DirectShape s{g.kh, g.kw, 1, 1, g.dh, g.dw, g.h, g.w, ld};
  std::vector<T> flipped(size_t(g.o * taps));
  for (int64_t oc = 0; oc < g.o; ++oc) {
    for (int64_t t = 0; t < taps; ++t) {
      flipped[size_t(oc * taps + t)] = w[oc * taps + taps - 1 - t];
    }
  }
  const int64_t grain =
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, og * g.hw() * taps));
  balanced_for(g.n * g.c, grain, [&](int64_t begin, int64_t end) {
    T* gpad = conv::scratch<T>(0, size_t(rows * ld));
    std::fill(gpad, gpad + rows * ld, T(0));  // Borders stay zero.
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / g.c, ci = p % g.c;
      for (int64_t oc = ci * og; oc < (ci + 1) * og; ++oc) {
        const T* plane = gout + (n * g.o + oc) * g.ohw();
        for (int64_t r = 0; r < g.oh; ++r) {
          std::memcpy(gpad + (r + eh) * ld + ew, plane + r * g.ow,
                      size_t(g.ow) * sizeof(T));
        }
        forward(s, gpad + g.ph * ld + g.pw, flipped.data() + oc * taps, T(0),
                dx + p * g.hw(), /*accumulate=*/oc > ci * og);
      }
    }
  });
}

template <class T>
void run(ConvOp op, const Geometry& g, const T* a, const T* b, const T* bias,
         T* out) {
  const int64_t og = g.og(), taps = g.kh * g.kw;
  const DirectShape s = direct_shape(g);
  const int64_t grain =
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, og * g.ohw() * taps));
  switch (op) {
    case ConvOp::conv2d:  // A task per input plane (n, ci), padded once.
      balanced_for(g.n * g.c, grain, [&](int64_t begin, int64_t end) {
        T* xpad = conv::scratch<T>(0, size_t(padded_size(g)));
        for (int64_t p = begin; p < end; ++p) {
          const int64_t n = p / g.c, ci = p % g.c;
          pad_plane(g, a + p * g.hw(), xpad);
          for (int64_t oc = ci * og; oc < (ci + 1) * og; ++oc) {
            forward(s, xpad, b + oc * taps, bias != nullptr ? bias[oc] : T(0),
                    out + (n * g.o + oc) * g.ohw());
          }
        }
      });
      break;
    case ConvOp::conv2d_backward_input:
      if (g.sh == 1 && g.sw == 1) {
        backward_input_flipped(g, a, b, out);
        break;
      }
      balanced_for(g.n * g.c, grain, [&](int64_t begin, int64_t end) {
        T* dxpad = conv::scratch<T>(0, size_t(padded_size(g)));
        for (int64_t p = begin; p < end; ++p) {
          const int64_t n = p / g.c, ci = p % g.c;
          std::fill(dxpad, dxpad + padded_size(g), T(0));
          for (int64_t oc = ci * og; oc < (ci + 1) * og; ++oc) {
            backward_input(s, a + (n * g.o + oc) * g.ohw(), b + oc * taps,
                           dxpad);
          }
          for (int64_t ih = 0; ih < g.h; ++ih) {
            std::memcpy(out + p * g.hw() + ih * g.w,
                        dxpad + (ih + g.ph) * s.ld + g.pw,
                        size_t(g.w) * sizeof(T));
          }
        }
      });
      break;
    case ConvOp::conv2d_backward_weight:
      // A task per range of output channels; image by image, each input
      // plane padded once for all the channels that read it. Every
      // channel's sums run over the images in order, whatever the split.
      balanced_for(g.o, std::max<int64_t>(1, grain / g.n),
                   [&](int64_t begin, int64_t end) {
                     const int64_t per = taps * g.ow;
                     std::vector<T> partial(size_t((end - begin) * per), T(0));
                     T* xpad = conv::scratch<T>(0, size_t(padded_size(g)));
                     for (int64_t n = 0; n < g.n; ++n) {
                       int64_t padded = -1;
                       for (int64_t oc = begin; oc < end; ++oc) {
                         if (oc / og != padded) {
                           padded = oc / og;
                           pad_plane(g, a + (n * g.c + padded) * g.hw(), xpad);
                         }
                         backward_weight(s, xpad, b + (n * g.o + oc) * g.ohw(),
                                         partial.data() + (oc - begin) * per);
                       }
                     }
                     for (int64_t oc = begin; oc < end; ++oc) {
                       const T* p = partial.data() + (oc - begin) * per;
                       for (int64_t t = 0; t < taps; ++t) {
                         T sum = T(0);
                         for (int64_t c = 0; c < g.ow; ++c)
                           sum += p[t * g.ow + c];
                         out[oc * taps + t] = sum;
                       }
                     }
                   });
      break;
  }
}

}  // namespace

void conv_direct(ConvOp op, const conv::Geometry& g, const float* a,
                 const float* b, const float* bias, float* out) {
  run(op, g, a, b, bias, out);
}
void conv_direct(ConvOp op, const conv::Geometry& g, const double* a,
                 const double* b, const double* bias, double* out) {
  run(op, g, a, b, bias, out);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
