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
