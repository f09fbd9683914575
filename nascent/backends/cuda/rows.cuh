// Row kernels' shared pieces (softmax.cu, norm.cu): block-wide reductions
// and the choice of a register-resident row layout.
//
// A row of up to kMaxRowThreads * 8 vectors of 16 bytes is read once into
// registers (in its storage type, so f16 and bf16 rows take half the
// registers), reduced across the block and written back: one pass over
// memory, so these ops run near copy bandwidth. Longer rows and rows whose
// length or address does not allow 16-byte vectors take a plain kernel that
// reads the row from memory (L2) once per pass.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "nascent/backends/cuda/device.cuh"

namespace nascent::cuda {

inline constexpr int kMaxRowThreads = 512;

// Reduces v over the block with op; every thread gets the result. `smem`
// holds one value per warp. Deterministic: a fixed shuffle tree.
template <class A, class Op>
NASCENT_D A block_reduce(A v, Op op, A* smem) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  __syncthreads();  // smem may still be read from a previous call.
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  A r = smem[0];
  for (int w = 1; w < warps; ++w) r = op(r, smem[w]);
  return r;
}

struct SumOp {
  template <class A>
  NASCENT_D A operator()(A a, A b) const {
    return a + b;
  }
};
// Max that lets NaN win.
struct MaxOp {
  template <class A>
  NASCENT_D A operator()(A a, A b) const {
    return b > a || b != b ? b : a;
  }
};

// Warp-level part of a reduction: every lane gets the warp's result.
template <class A, class Op>
NASCENT_D A warp_reduce(A v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// block_reduce with one barrier instead of two, for the register-resident
// kernels: `smem` must not be read by any thread since the last barrier
// (each reduction of a row has its own array, and the kernels put a barrier
// between rows). Every thread combines the warps' values in the same order,
// so all get the same bits.
template <class A, class Op>
NASCENT_D A block_reduce_once(A v, Op op, A* smem) {
  v = warp_reduce(v, op);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  A r = smem[0];
  for (int w = 1; w < warps; ++w) r = op(r, smem[w]);
  return r;
}

// Loads this thread's vectors of row `row` (nothing past the last row), all
// issued before any is used, so that a block has its whole row in flight.
template <int kItems, class T, int V>
NASCENT_D void load_row(Vec<T, V> (&v)[kItems], const T* x, int64_t row,
                        int64_t rows, int64_t cols, int64_t nvec) {
  if (row >= rows) return;
  const Vec<T, V>* xr = reinterpret_cast<const Vec<T, V>*>(x + row * cols);
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (j < nvec) v[it] = xr[j];
  }
}

// --- f16 and bf16 rows: two elements a 32-bit word -------------------------

// The 32-bit words of a vector of 8 halves.
template <class T>
NASCENT_D uint32_t word(const Vec<T, 8>& v, int k) {
  uint32_t w;
  memcpy(&w, &v.v[2 * k], 4);
  return w;
}
// The low and high element of a word, in float.
template <class T>
NASCENT_D float word_lo(uint32_t w) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return __uint_as_float(w << 16);
  } else {
    return __half2float(__ushort_as_half(uint16_t(w & 0xffffu)));
  }
}
template <class T>
NASCENT_D float word_hi(uint32_t w) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return __uint_as_float(w & 0xffff0000u);
  } else {
    return __half2float(__ushort_as_half(uint16_t(w >> 16)));
  }
}
// Two floats to a word. bf16: rounded to nearest even by one instruction
// (cvt.rn.bf16x2.f32), the bits of to_bf16 for every value the GPU's
// arithmetic makes (its NaN is 0x7fffffff, which both turn into 0x7fff).
// f16: to_f16, whose NaN (0x7e00) the instruction would not give.
template <class T>
NASCENT_D uint32_t pack_word(float lo, float hi) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    uint32_t w;
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &h, 4);
    return w;
  } else {
    return uint32_t(to_f16(lo).bits) | (uint32_t(to_f16(hi).bits) << 16);
  }
}
template <class T>
NASCENT_D void set_word(Vec<T, 8>& v, int k, uint32_t w) {
  memcpy(&v.v[2 * k], &w, 4);
}
// The larger of two pairs, element-wise; NaN wins (any NaN: the kernels
// only use this to find whether the row has one).
template <class T>
NASCENT_D uint32_t max_word(uint32_t a, uint32_t b) {
  uint32_t w;
  if constexpr (std::is_same_v<T, bfloat16>) {
    __nv_bfloat162 x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    const __nv_bfloat162 m = __hmax2_nan(x, y);
    memcpy(&w, &m, 4);
  } else {
    __half2 x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    const __half2 m = __hmax2_nan(x, y);
    memcpy(&w, &m, 4);
  }
  return w;
}

// 2^x by the special-function unit, flushing subnormal results to 0: far
// inside an f16 or bf16 result's rounding.
NASCENT_D float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Rows of up to 4 vectors a thread run in blocks of at most this many.
inline constexpr int kSmallRowThreads = 128;

// Vectors per thread and threads per row for the register-resident kernels;
// items == 0 when the row does not fit them.
struct RowLayout {
  int items = 0;
  int threads = 0;
};

// Blocks of at most 128 threads (NASCENT_CUDA_ROW_THREADS, 32 to 128,
// overrides, for tuning), so that a register-resident row costs few
// registers per thread and many rows are in flight on each SM; wider blocks
// only for rows that need 8 vectors a thread.
inline int row_threads_target() {
  static const int target = [] {
    const char* v = std::getenv("NASCENT_CUDA_ROW_THREADS");
    const int t = v != nullptr ? std::atoi(v) : 0;
    return t >= 32 && t <= kSmallRowThreads ? t : kSmallRowThreads;
  }();
  return target;
}

inline RowLayout row_layout(int64_t cols, int vec, bool aligned) {
  RowLayout l;
  if (!aligned || cols % vec != 0 || cols == 0) return l;
  const int64_t nvec = cols / vec;
  const int target = row_threads_target();
  for (int items : {1, 2, 4, 8}) {
    const int64_t threads = (nvec + items - 1) / items;
    if (threads <= target || (items == 8 && threads <= kMaxRowThreads)) {
      l.items = items;
      l.threads = int((threads + 31) / 32 * 32);
      return l;
    }
  }
  return l;
}

}  // namespace nascent::cuda
