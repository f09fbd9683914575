// layer_norm and rms_norm over a contiguous [rows, cols] x, with the CPU
// backend's semantics (cpu/norm_simd.cpp): statistics from per-thread sums in
// the compute type reduced in double (two passes for layer_norm, so a large
// common offset does not cancel), then
// y = (x - mean) * rstd * w + b in the compute type (float for f16, bf16 and
// f32). A block per row holds the row in registers (rows.cuh), or reads it
// from L2 once per pass when it is too long. mean and rstd ([rows], f32 or
// f64) are written when asked; rms_norm has no mean.
#include <algorithm>
#include <cmath>

#include "nascent/backends/cuda/rows.cuh"

namespace nascent::cuda {

namespace {

template <class T>
struct NormArgs {
  const T* x;
  const T* w;  // May be null, as may b, mean and rstd.
  const T* b;
  T* y;
  compute_t<T>* mean;
  compute_t<T>* rstd;
  int64_t rows, cols;
  double eps;
  bool rms;
};

template <class C>
NASCENT_D C affine(C v, C shift, C scale, C w, C b) {
  if constexpr (std::is_same_v<C, float>) {
    return fmaf((v - shift) * scale, w, b);
  } else {
    return fma((v - shift) * scale, w, b);
  }
}

// The weight and bias vectors are loaded after the reductions: loading
// them with the row (no load after the last barrier) cost registers and
// ran 35% slower on the H200.
template <class T, int kItems>
__global__ void __launch_bounds__(kMaxRowThreads)
    norm_rows_regs(NormArgs<T> a) {
  using C = compute_t<T>;
  constexpr int V = 16 / sizeof(T);
  using VT = Vec<T, V>;
  __shared__ double smem[32], smem2[32];
  const int64_t nvec = a.cols / V;
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    VT v[kItems];
    load_row<kItems>(v, a.x, row, a.rows, a.cols, nvec);
    VT* yr = reinterpret_cast<VT*>(a.y + row * a.cols);
    // A thread's few values sum in the compute type, the block in double.
    C part = 0;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const C d = convert<C>(v[it].v[k]);
          part += a.rms ? d * d : d;
        }
      }
    }
    const double s = block_reduce_once(double(part), SumOp(), smem);
    double mean = 0, var;
    if (a.rms) {
      var = s / double(a.cols);
    } else {
      mean = s / double(a.cols);
      const C cmean = C(mean);
      C q = 0;
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
        if (j < nvec) {
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const C d = convert<C>(v[it].v[k]) - cmean;
            q += d * d;
          }
        }
      }
      var = block_reduce_once(double(q), SumOp(), smem2) / double(a.cols);
    }
    const double rstd = 1.0 / ::sqrt(var + a.eps);
    const C cm = C(mean), cr = C(rstd);
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
      if (j < nvec) {
        VT w, b, out;
        if (a.w) w = reinterpret_cast<const VT*>(a.w)[j];
        if (a.b) b = reinterpret_cast<const VT*>(a.b)[j];
#pragma unroll
        for (int k = 0; k < V; ++k) {
          out.v[k] = convert<T>(affine(convert<C>(v[it].v[k]), cm, cr,
                                       a.w ? convert<C>(w.v[k]) : C(1),
                                       a.b ? convert<C>(b.v[k]) : C(0)));
        }
        yr[j] = out;
      }
    }
    if (threadIdx.x == 0) {
      if (a.mean && !a.rms) a.mean[row] = cm;
      if (a.rstd) a.rstd[row] = cr;
    }
    if (row + gridDim.x < a.rows) __syncthreads();  // smem is reused.
  }
}

// rms_norm of f16 and bf16 rows in registers with fewer instructions and
// registers than norm_rows_regs (no mean or bias, the squares summed by
// FMA, pairs packed by one convert, the weights read through the read-only
// path after the reduction): the same results (y = fma(x * rstd, w, 0)).
// 52 registers instead of 64 at 4 vectors a thread: 0.1646 -> 0.1344 ms on
// (32768, 4096) bf16 on the H200 (bench/NOTES.md, Session 5).
template <class T, int kItems, bool kWeight>
__global__ void __launch_bounds__(kMaxRowThreads) rms_rows_half(NormArgs<T> a) {
  // The row as 32-bit words: as Vec<T, 8> the compiler kept a register for
  // each 16-bit element (54 registers a thread at 4 vectors, 52 so).
  using VW = Vec<uint32_t, 4>;
  __shared__ double smem[32];
  const int nvec = int(a.cols / 8);
  const uint32_t* xw = reinterpret_cast<const uint32_t*>(a.x);
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    VW v[kItems];
    load_row<kItems>(v, xw, row, a.rows, a.cols / 2, nvec);
    VW* yr = reinterpret_cast<VW*>(a.y + row * a.cols);
    float part = 0;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int j = it * int(blockDim.x) + int(threadIdx.x);
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float lo = word_lo<T>(v[it].v[k]), hi = word_hi<T>(v[it].v[k]);
          part = fmaf(lo, lo, part);
          part = fmaf(hi, hi, part);
        }
      }
    }
    const double s = block_reduce_once(double(part), SumOp(), smem);
    const float cr = float(1.0 / ::sqrt(s / double(a.cols) + a.eps));
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int j = it * int(blockDim.x) + int(threadIdx.x);
      if (j < nvec) {
        VW wv, out;
        if constexpr (kWeight) {
          const int4 t = __ldg(reinterpret_cast<const int4*>(a.w) + j);
          memcpy(&wv, &t, 16);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          float lo = word_lo<T>(v[it].v[k]) * cr;
          float hi = word_hi<T>(v[it].v[k]) * cr;
          if constexpr (kWeight) {
            lo = fmaf(lo, word_lo<T>(wv.v[k]), 0.0f);
            hi = fmaf(hi, word_hi<T>(wv.v[k]), 0.0f);
          } else {
            lo = fmaf(lo, 1.0f, 0.0f);
            hi = fmaf(hi, 1.0f, 0.0f);
          }
          out.v[k] = pack_word<T>(lo, hi);
        }
        yr[j] = out;
      }
    }
    if (threadIdx.x == 0 && a.rstd) a.rstd[row] = cr;
    if (row + gridDim.x < a.rows) __syncthreads();  // smem is reused.
  }
}

// Any row length: the row is read once per pass.
template <class T>
__global__ void __launch_bounds__(256) norm_rows_plain(NormArgs<T> a) {
  using C = compute_t<T>;
  __shared__ double smem[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = a.x + row * a.cols;
    T* yr = a.y + row * a.cols;
    double s = 0;
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const double v = to_f64(xr[j]);
      s += a.rms ? v * v : v;
    }
    s = block_reduce(s, SumOp(), smem);
    double mean = 0, var;
    if (a.rms) {
      var = s / double(a.cols);
    } else {
      mean = s / double(a.cols);
      double q = 0;
      for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
        const double d = to_f64(xr[j]) - mean;
        q += d * d;
      }
      var = block_reduce(q, SumOp(), smem) / double(a.cols);
    }
    const double rstd = 1.0 / ::sqrt(var + a.eps);
    const C cm = C(mean), cr = C(rstd);
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
      yr[j] = convert<T>(affine(convert<C>(xr[j]), cm, cr,
                                a.w ? convert<C>(a.w[j]) : C(1),
                                a.b ? convert<C>(a.b[j]) : C(0)));
    }
    if (threadIdx.x == 0) {
      if (a.mean && !a.rms) a.mean[row] = cm;
      if (a.rstd) a.rstd[row] = cr;
    }
  }
}

template <class T>
void norm_typed(Context& ctx, const NormArgs<T>& a) {
  const unsigned grid = unsigned(std::min<int64_t>(a.rows, 1 << 20));
  const bool aligned = aligned16(a.x) && aligned16(a.y) &&
                       (a.w == nullptr || aligned16(a.w)) &&
                       (a.b == nullptr || aligned16(a.b));
  const RowLayout l = row_layout(a.cols, 16 / int(sizeof(T)), aligned);
  auto regs = [&](auto kernel) {
    kernel<<<grid, l.threads, 0, ctx.stream>>>(a);
  };
  if constexpr (is_half_v<T>) {
    auto rms = [&](auto with_w, auto without_w) {
      regs(a.w != nullptr ? with_w : without_w);
    };
    if (a.rms) {
      switch (l.items) {
        case 1:
          rms(rms_rows_half<T, 1, true>, rms_rows_half<T, 1, false>);
          break;
        case 2:
          rms(rms_rows_half<T, 2, true>, rms_rows_half<T, 2, false>);
          break;
        case 4:
          rms(rms_rows_half<T, 4, true>, rms_rows_half<T, 4, false>);
          break;
        case 8:
          rms(rms_rows_half<T, 8, true>, rms_rows_half<T, 8, false>);
          break;
        default:
          break;
      }
      if (l.items != 0) {
        check_launch("norm");
        return;
      }
    }
  }
  switch (l.items) {
    case 1:
      regs(norm_rows_regs<T, 1>);
      break;
    case 2:
      regs(norm_rows_regs<T, 2>);
      break;
    case 4:
      regs(norm_rows_regs<T, 4>);
      break;
    case 8:
      regs(norm_rows_regs<T, 8>);
      break;
    default: {
      const int threads =
          a.cols >= 256 ? 256 : std::max(32, int((a.cols + 31) / 32 * 32));
      norm_rows_plain<T><<<grid, threads, 0, ctx.stream>>>(a);
      break;
    }
  }
  check_launch("norm");
}

}  // namespace

void Backend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                   const Tensor* bias, double eps, Tensor& out, Tensor* mean,
                   Tensor* rstd) {
  DeviceGuard guard(ctx_->device);
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (rows == 0) return;
  dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      using C = compute_t<T>;
      NormArgs<T> a;
      a.rms = op == NormOp::rms_norm;
      a.x = data_ptr<T>(x);
      a.w = weight ? data_ptr<T>(*weight) : nullptr;
      a.b = bias && !a.rms ? data_ptr<T>(*bias) : nullptr;
      a.y = data_ptr<T>(out);
      a.mean = mean ? data_ptr<C>(*mean) : nullptr;
      a.rstd = rstd ? data_ptr<C>(*rstd) : nullptr;
      a.rows = rows;
      a.cols = cols;
      a.eps = eps;
      norm_typed<T>(*ctx_, a);
    } else {
      unsupported(nascent::name(op), x);
    }
  });
}

}  // namespace nascent::cuda
