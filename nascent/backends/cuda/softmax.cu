// softmax and log_softmax with the CPU backend's semantics
// (cpu/softmax_simd.cpp): f16, bf16 and f32 compute in float with the sum of
// exponentials reduced in double across threads; a NaN in a row makes the
// row NaN and +inf gives NaN, as in PyTorch. x is contiguous, seen as
// [outer, len, inner] around the axis.
//  - inner == 1 (the last axis): a block per row, the row held in
//    registers (rows.cuh), or read from L2 once per pass when too long;
//  - inner > 1: a thread per (outer, inner) column, three passes.
#include <cmath>

#include "nascent/backends/cuda/rows.cuh"

namespace nascent::cuda {

namespace {

template <class C>
NASCENT_D C exp_c(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return expf(v);
  } else {
    return ::exp(v);
  }
}

template <class C>
NASCENT_D C log_c(double v) {
  return C(::log(v));
}

// exp for the register-resident kernels: the hardware's approximation for
// f16 and bf16, whose rounding is far coarser than its error.
template <class T, class C>
NASCENT_D C exp_row(C v) {
  if constexpr (is_half_v<T>) {
    return __expf(v);
  } else {
    return exp_c(v);
  }
}

// The register-resident row kernel: each thread holds kItems vectors of
// the row in its storage type; a block per row (many small blocks keep the
// most rows in flight: a persistent grid that prefetched the next row ran
// 30% slower on the H200, see bench/NOTES.md). Two block reductions (the
// maximum, then the sum of exponentials): a one-pass form that reduced
// (max, sum) pairs once ran 9% slower there.
template <class T, int kItems>
__global__ void __launch_bounds__(kMaxRowThreads)
    softmax_rows_regs(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using C = compute_t<T>;
  constexpr int V = 16 / sizeof(T);
  using VT = Vec<T, V>;
  __shared__ double smem_d[32];
  __shared__ C smem_c[32];
  const int64_t nvec = cols / V;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    VT v[kItems];
    load_row<kItems>(v, x, row, rows, cols, nvec);
    VT* yr = reinterpret_cast<VT*>(y + row * cols);
    C m = -INFINITY;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < V; ++k) m = MaxOp()(m, convert<C>(v[it].v[k]));
      }
    }
    m = block_reduce_once(m, MaxOp(), smem_c);
    C part = 0;
    if (m == m) {
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
        if (j < nvec) {
#pragma unroll
          for (int k = 0; k < V; ++k) {
            part += exp_row<T>(convert<C>(v[it].v[k]) - m);
          }
        }
      }
    }
    const double sum = block_reduce_once(double(part), SumOp(), smem_d);
    const C scale = log ? log_c<C>(sum) : C(1.0 / sum);
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
      if (j < nvec) {
        VT out;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const C t = convert<C>(v[it].v[k]) - m;
          const C r = log ? t - scale : exp_row<T>(t) * scale;
          out.v[k] = convert<T>(m != m ? m : r);  // A NaN row stays NaN.
        }
        yr[j] = out;
      }
    }
    if (row + gridDim.x < rows) __syncthreads();  // smem is reused.
  }
}

// softmax_rows_half's rows with a NaN or an inf, element-wise from memory
// as softmax_rows_regs (out of line: keeping the registers' copy of the row
// for this path cost 24 registers). m: the maximum, NaN if the row has one
// (recomputed here to keep the row's own NaN); sum: of exp(x - m).
template <class T, bool kLog>
__device__ __noinline__ void softmax_row_exact(const T* xr, T* yr, int64_t cols,
                                               float m, double sum,
                                               float* smem) {
  if (m != m) {
    m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      m = MaxOp()(m, convert<float>(xr[j]));
    }
    m = block_reduce(m, MaxOp(), smem);
  }
  const float scale = kLog ? float(::log(sum)) : float(1.0 / sum);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float t = convert<float>(xr[j]) - m;
    const float r = kLog ? t - scale : __expf(t) * scale;
    yr[j] = convert<T>(m != m ? m : r);
  }
}

// The register-resident kernel for f16 and bf16 (a block per row, as
// above), with fewer instructions and registers an element: the maximum of
// pairs (hmax2), exp(x - m) as one FMA and one exp2 on the special-function
// unit, pairs packed by one convert. 37 registers (40 for log_softmax)
// instead of 60 at 4 vectors a thread, so 12 blocks of 128 fit an SM
// instead of 8: 0.2028 -> 0.1331 ms on (32768, 4096) bf16 on the H200
// (bench/NOTES.md, Session 5). A row with a NaN, or an inf that makes the
// sum NaN, takes softmax_row_exact (rare, uniform in the block).
template <class T, int kItems, bool kLog>
__global__ void __launch_bounds__(kMaxRowThreads)
    softmax_rows_half(const T* x, T* y, int64_t rows, int64_t cols) {
  using VT = Vec<T, 8>;
  __shared__ double smem_d[32];
  __shared__ float smem_c[32];
  const int nvec = int(cols / 8);
  constexpr float kLog2e = 1.4426950408889634f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    VT v[kItems];
    load_row<kItems>(v, x, row, rows, cols, nvec);
    VT* yr = reinterpret_cast<VT*>(y + row * cols);
    uint32_t mw = std::is_same_v<T, bfloat16> ? 0xff80ff80u : 0xfc00fc00u;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int j = it * int(blockDim.x) + int(threadIdx.x);
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < 4; ++k) mw = max_word<T>(mw, word(v[it], k));
      }
    }
    const float m = block_reduce_once(MaxOp()(word_lo<T>(mw), word_hi<T>(mw)),
                                      MaxOp(), smem_c);
    const float ml = m * kLog2e;
    // A NaN m makes the sum NaN, and the row takes the exact path.
    float part = 0;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int j = it * int(blockDim.x) + int(threadIdx.x);
      if (j < nvec) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t w = word(v[it], k);
          part += exp2_approx(fmaf(word_lo<T>(w), kLog2e, -ml));
          part += exp2_approx(fmaf(word_hi<T>(w), kLog2e, -ml));
        }
      }
    }
    const double sum = block_reduce_once(double(part), SumOp(), smem_d);
    if (m == m && sum == sum) {
      const float scale = kLog ? float(::log(sum)) : float(1.0 / sum);
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int j = it * int(blockDim.x) + int(threadIdx.x);
        if (j < nvec) {
          VT out;
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const uint32_t w = word(v[it], k);
            const float a = word_lo<T>(w), b = word_hi<T>(w);
            if constexpr (kLog) {
              set_word(out, k, pack_word<T>(a - m - scale, b - m - scale));
            } else {
              set_word(out, k,
                       pack_word<T>(exp2_approx(fmaf(a, kLog2e, -ml)) * scale,
                                    exp2_approx(fmaf(b, kLog2e, -ml)) * scale));
            }
          }
          yr[j] = out;
        }
      }
    } else {
      softmax_row_exact<T, kLog>(x + row * cols, y + row * cols, cols, m, sum,
                                 smem_c);
    }
    if (row + gridDim.x < rows) __syncthreads();  // smem is reused.
  }
}

// Any row length: three passes over the row (max, sum, write).
template <class T>
__global__ void __launch_bounds__(256)
    softmax_rows_plain(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using C = compute_t<T>;
  __shared__ double smem_d[32];
  __shared__ C smem_c[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    C m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      m = MaxOp()(m, convert<C>(xr[j]));
    }
    m = block_reduce(m, MaxOp(), smem_c);
    C part = 0;
    if (m == m) {
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        part += exp_c(convert<C>(xr[j]) - m);
      }
    }
    const double sum = block_reduce(double(part), SumOp(), smem_d);
    const C scale = log ? log_c<C>(sum) : C(1.0 / sum);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const C t = convert<C>(xr[j]) - m;
      C r = log ? t - scale : exp_c(t) * scale;
      if (m != m) r = m;
      yr[j] = convert<T>(r);
    }
  }
}

// inner > 1: a thread per column of the [len] axis.
template <class T>
__global__ void softmax_cols(const T* x, T* y, int64_t outer, int64_t len,
                             int64_t inner, bool log) {
  using C = compute_t<T>;
  const int64_t total = outer * inner;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / inner, j = t % inner;
    const T* xc = x + o * len * inner + j;
    T* yc = y + o * len * inner + j;
    C m = -INFINITY;
    for (int64_t l = 0; l < len; ++l) m = MaxOp()(m, convert<C>(xc[l * inner]));
    double sum = 0;
    if (m == m) {
      for (int64_t l = 0; l < len; ++l) {
        sum += double(exp_c(convert<C>(xc[l * inner]) - m));
      }
    }
    const C scale = log ? log_c<C>(sum) : C(1.0 / sum);
    for (int64_t l = 0; l < len; ++l) {
      const C v = convert<C>(xc[l * inner]) - m;
      C r = log ? v - scale : exp_c(v) * scale;
      if (m != m) r = m;
      yc[l * inner] = convert<T>(r);
    }
  }
}

template <class T>
void softmax_typed(Context& ctx, const Tensor& x, int axis, bool log,
                   Tensor& out) {
  const T* px = data_ptr<T>(x);
  T* py = data_ptr<T>(out);
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < x.ndim(); ++d) {
    const int64_t s = x.shape()[size_t(d)];
    if (d < axis) outer *= s;
    if (d == axis) len = s;
    if (d > axis) inner *= s;
  }
  if (inner > 1) {
    softmax_cols<T>
        <<<grid_for(outer * inner, 128, 65536), 128, 0, ctx.stream>>>(
            px, py, outer, len, inner, log);
    check_launch("softmax");
    return;
  }
  const int64_t rows = outer;
  const unsigned grid = unsigned(std::min<int64_t>(rows, 1 << 20));
  const RowLayout l =
      row_layout(len, 16 / int(sizeof(T)), aligned16(px) && aligned16(py));
  auto regs = [&](auto kernel) {
    kernel<<<grid, l.threads, 0, ctx.stream>>>(px, py, rows, len, log);
  };
  if constexpr (is_half_v<T>) {
    auto half = [&](auto plain, auto logk) {
      (log ? logk : plain)<<<grid, l.threads, 0, ctx.stream>>>(px, py, rows,
                                                               len);
    };
    switch (l.items) {
      case 1:
        half(softmax_rows_half<T, 1, false>, softmax_rows_half<T, 1, true>);
        break;
      case 2:
        half(softmax_rows_half<T, 2, false>, softmax_rows_half<T, 2, true>);
        break;
      case 4:
        half(softmax_rows_half<T, 4, false>, softmax_rows_half<T, 4, true>);
        break;
      case 8:
        half(softmax_rows_half<T, 8, false>, softmax_rows_half<T, 8, true>);
        break;
      default:
        break;
    }
    if (l.items != 0) {
      check_launch("softmax");
      return;
    }
  }
  switch (l.items) {
    case 1:
      regs(softmax_rows_regs<T, 1>);
      break;
    case 2:
      regs(softmax_rows_regs<T, 2>);
      break;
    case 4:
      regs(softmax_rows_regs<T, 4>);
      break;
    case 8:
      regs(softmax_rows_regs<T, 8>);
      break;
    default: {
      const int threads = len >= 256 ? 256 : int((len + 31) / 32 * 32);
      softmax_rows_plain<T>
          <<<grid, threads, 0, ctx.stream>>>(px, py, rows, len, log);
      break;
    }
  }
  check_launch("softmax");
}

}  // namespace

void Backend::softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  if (out.numel() == 0) return;
  const bool log = op == SoftmaxOp::log_softmax;
  // A 0-d x is one row of one element.
  const int ax = x.ndim() == 0 ? 0 : axis;
  dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      softmax_typed<T>(*ctx_, x, ax, log, out);
    } else {
      unsupported("softmax", x);
    }
  });
}

}  // namespace nascent::cuda
