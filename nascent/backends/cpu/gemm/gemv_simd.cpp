// Matrix-vector products (a GEMM with m == 1 or n == 1), one copy per SIMD
// target. Each matrix element is used once, so the GEMM's packing would
// cost more than the arithmetic and its 6-row tile would be five sixths
// padding: these kernels read the matrix once, in place.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/gemm/gemv_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include <algorithm>

#include "nascent/backends/cpu/gemm/kernel.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/gemm/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

// Output elements per block of the axpy form: the block of y (16 KiB of
// f32) stays in L1 while the matrix streams past it.
constexpr size_t kAxpyBlock = 4096;

// y[i] (+)= sum_p M(i, p) x[p], M(i, p) = mat[i * si + p * sp].
template <class S, class T>
void Gemv(const GemvArgs& g, const S* mat, const S* x, T* y) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const size_t len = size_t(g.len), k = size_t(g.k);
  if (len == 0) return;
  // x widened and contiguous, so the loops below read it with vector loads.
  T* xc = static_cast<T*>(gemm_scratch(GemmBuffer::vector, k * sizeof(T)));
  for (size_t p = 0; p < k; ++p) xc[p] = ToCompute(x[int64_t(p) * g.sx]);

  if (g.sp == 1) {
    // Dot form: rows of M are contiguous (x @ W^T, A @ b). Four rows at a
    // time: four memory streams in flight, and each load of x used 4 times.
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
      const S* r0 = mat + int64_t(i) * g.si;
      const S* r1 = r0 + g.si;
      const S* r2 = r1 + g.si;
      const S* r3 = r2 + g.si;
      V s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
      size_t p = 0;
      for (; p + lanes <= k; p += lanes) {
        const V xv = hn::LoadU(d, xc + p);
        s0 = hn::MulAdd(LoadAs(d, r0 + p), xv, s0);
        s1 = hn::MulAdd(LoadAs(d, r1 + p), xv, s1);
        s2 = hn::MulAdd(LoadAs(d, r2 + p), xv, s2);
        s3 = hn::MulAdd(LoadAs(d, r3 + p), xv, s3);
      }
      T sum[4] = {hn::GetLane(hn::SumOfLanes(d, s0)),
                  hn::GetLane(hn::SumOfLanes(d, s1)),
                  hn::GetLane(hn::SumOfLanes(d, s2)),
                  hn::GetLane(hn::SumOfLanes(d, s3))};
      for (; p < k; ++p) {
        sum[0] += ToCompute(r0[p]) * xc[p];
        sum[1] += ToCompute(r1[p]) * xc[p];
        sum[2] += ToCompute(r2[p]) * xc[p];
        sum[3] += ToCompute(r3[p]) * xc[p];
      }
      for (size_t r = 0; r < 4; ++r) {
        T& out = y[int64_t(i + r) * g.sy];
        out = g.accumulate ? out + sum[r] : sum[r];
      }
    }
    for (; i < len; ++i) {
      const S* row = mat + int64_t(i) * g.si;
      V s0 = hn::Zero(d);
      size_t p = 0;
      for (; p + lanes <= k; p += lanes) {
        s0 = hn::MulAdd(LoadAs(d, row + p), hn::LoadU(d, xc + p), s0);
      }
      T sum = hn::GetLane(hn::SumOfLanes(d, s0));
      for (; p < k; ++p) sum += ToCompute(row[p]) * xc[p];
      T& out = y[int64_t(i) * g.sy];
      out = g.accumulate ? out + sum : sum;
    }
    return;
  }

  if (g.si == 1) {
    // Axpy form: columns of M are contiguous (x @ W, A^T @ b): a block of
    // y gathers x[p] times row p of M^T, four rows per pass over the block.
    HWY_ALIGN T acc[kAxpyBlock];
    for (size_t i0 = 0; i0 < len; i0 += kAxpyBlock) {
      const size_t n = std::min(kAxpyBlock, len - i0);
      std::fill_n(acc, n, T(0));
      size_t p = 0;
      for (; p + 4 <= k; p += 4) {
        const S* c0 = mat + int64_t(p) * g.sp + int64_t(i0);
        const S* c1 = c0 + g.sp;
        const S* c2 = c1 + g.sp;
        const S* c3 = c2 + g.sp;
        const V x0 = hn::Set(d, xc[p]), x1 = hn::Set(d, xc[p + 1]);
        const V x2 = hn::Set(d, xc[p + 2]), x3 = hn::Set(d, xc[p + 3]);
        size_t i = 0;
        for (; i + lanes <= n; i += lanes) {
          V a = hn::MulAdd(x0, LoadAs(d, c0 + i), hn::Load(d, acc + i));
          a = hn::MulAdd(x1, LoadAs(d, c1 + i), a);
          a = hn::MulAdd(x2, LoadAs(d, c2 + i), a);
          hn::Store(hn::MulAdd(x3, LoadAs(d, c3 + i), a), d, acc + i);
        }
        for (; i < n; ++i) {
          acc[i] += xc[p] * ToCompute(c0[i]) + xc[p + 1] * ToCompute(c1[i]) +
                    xc[p + 2] * ToCompute(c2[i]) + xc[p + 3] * ToCompute(c3[i]);
        }
      }
      for (; p < k; ++p) {
        const S* col = mat + int64_t(p) * g.sp + int64_t(i0);
        const V xp = hn::Set(d, xc[p]);
        size_t i = 0;
        for (; i + lanes <= n; i += lanes) {
          hn::Store(hn::MulAdd(xp, LoadAs(d, col + i), hn::Load(d, acc + i)), d,
                    acc + i);
        }
        for (; i < n; ++i) acc[i] += xc[p] * ToCompute(col[i]);
      }
      for (size_t i = 0; i < n; ++i) {
        T& out = y[int64_t(i0 + i) * g.sy];
        out = g.accumulate ? out + acc[i] : acc[i];
      }
    }
    return;
  }

  for (size_t i = 0; i < len; ++i) {  // Neither axis contiguous.
    T sum = 0;
    for (size_t p = 0; p < k; ++p) {
      sum += ToCompute(mat[int64_t(i) * g.si + int64_t(p) * g.sp]) * xc[p];
    }
    T& out = y[int64_t(i) * g.sy];
    out = g.accumulate ? out + sum : sum;
  }
}

}  // namespace

void GemvF32(const GemvArgs& g, const float* mat, const float* x, float* y) {
  Gemv(g, mat, x, y);
}
void GemvF16(const GemvArgs& g, const float16* mat, const float16* x,
             float* y) {
  Gemv(g, mat, x, y);
}
void GemvBF16(const GemvArgs& g, const bfloat16* mat, const bfloat16* x,
              float* y) {
  Gemv(g, mat, x, y);
}
#if HWY_HAVE_FLOAT64
void GemvF64(const GemvArgs& g, const double* mat, const double* x, double* y) {
  Gemv(g, mat, x, y);
}
#else
// No f64 vectors on this target (WASM SIMD128 in Highway 1.0.3).
void GemvF64(const GemvArgs& g, const double* mat, const double* x, double* y) {
  for (int64_t i = 0; i < g.len; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < g.k; ++p) {
      sum += mat[i * g.si + p * g.sp] * x[p * g.sx];
    }
    double& out = y[i * g.sy];
    out = g.accumulate ? out + sum : sum;
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(GemvF32);
HWY_EXPORT(GemvF64);
HWY_EXPORT(GemvF16);
HWY_EXPORT(GemvBF16);

void gemv_f32(const GemvArgs& g, const float* mat, const float* x, float* y) {
  HWY_DYNAMIC_DISPATCH(GemvF32)(g, mat, x, y);
}
void gemv_f64(const GemvArgs& g, const double* mat, const double* x,
              double* y) {
  HWY_DYNAMIC_DISPATCH(GemvF64)(g, mat, x, y);
}
void gemv_f16(const GemvArgs& g, const float16* mat, const float16* x,
              float* y) {
  HWY_DYNAMIC_DISPATCH(GemvF16)(g, mat, x, y);
}
void gemv_bf16(const GemvArgs& g, const bfloat16* mat, const bfloat16* x,
               float* y) {
  HWY_DYNAMIC_DISPATCH(GemvBF16)(g, mat, x, y);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
