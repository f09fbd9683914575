// Direct convolution kernels (see conv_direct.h). Each output row runs in
// SIMD blocks of columns (full, half and quarter vectors, as rows are short)
// with a scalar tail; strides above 2 run scalar.
#include "nascent/backends/cpu/conv_direct.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/conv_direct.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "nascent/backends/cpu/image_simd-inl.h"

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
  BackwardWeight(s, xpad, grad_out, partial);
}
void BackwardWeightF64(const DirectShape& s, const double* xpad,
                       const double* grad_out, double* partial) {
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

void direct_forward(const DirectShape& s, const float* xpad, const float* w,
                    float bias, float* out, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(ForwardF32)(s, xpad, w, bias, out, accumulate);
}
void direct_forward(const DirectShape& s, const double* xpad, const double* w,
                    double bias, double* out, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(ForwardF64)(s, xpad, w, bias, out, accumulate);
}
void direct_backward_input(const DirectShape& s, const float* grad_out,
                           const float* w, float* dxpad) {
  HWY_DYNAMIC_DISPATCH(BackwardInputF32)(s, grad_out, w, dxpad);
}
void direct_backward_input(const DirectShape& s, const double* grad_out,
                           const double* w, double* dxpad) {
  HWY_DYNAMIC_DISPATCH(BackwardInputF64)(s, grad_out, w, dxpad);
}
void direct_backward_weight(const DirectShape& s, const float* xpad,
                            const float* grad_out, float* partial) {
  HWY_DYNAMIC_DISPATCH(BackwardWeightF32)(s, xpad, grad_out, partial);
}
void direct_backward_weight(const DirectShape& s, const double* xpad,
                            const double* grad_out, double* partial) {
  HWY_DYNAMIC_DISPATCH(BackwardWeightF64)(s, xpad, grad_out, partial);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
