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
#include <string>

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

// Loads this thread's vectors of row `row` (nothing past the last row).
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

// Vectors per thread and threads per row for the register-resident kernels;
// items == 0 when the row does not fit them.
struct RowLayout {
  int items = 0;
  int threads = 0;
};

// Blocks of at most 128 threads (NASCENT_CUDA_ROW_THREADS overrides, for
// tuning), so that a register-resident row costs few registers per thread
// and many rows are in flight on each SM; wider blocks only for rows that
// need more than 8 vectors a thread.
inline int row_threads_target() {
  static const int target = [] {
    const char* v = std::getenv("NASCENT_CUDA_ROW_THREADS");
    const int t = v != nullptr ? std::atoi(v) : 0;
    return t >= 32 && t <= kMaxRowThreads ? t : 128;
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

// Rows of at most 16 vectors a lane take a warp each, kWarpRowsPerBlock to
// a block: the passes over a row then meet in shuffles only, with no
// __syncthreads or shared memory between them, and a block's rows are in
// flight together. NASCENT_CUDA_ROW_MODE=block sends them to the
// block-per-row kernels instead (for comparison on the benchmark shapes).
inline constexpr int kWarpRowsPerBlock = 4;

inline bool warp_rows_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("NASCENT_CUDA_ROW_MODE");
    return v == nullptr || std::string(v) != "block";
  }();
  return enabled;
}

// Vectors per lane for the warp-per-row kernels; 0 when the row does not
// fit them (or they are switched off).
inline int warp_row_items(int64_t cols, int vec, bool aligned) {
  if (!aligned || cols % vec != 0 || cols == 0 || !warp_rows_enabled()) {
    return 0;
  }
  const int64_t nvec = cols / vec;
  for (int items : {1, 2, 4, 8, 16}) {
    if (nvec <= 32 * int64_t(items)) return items;
  }
  return 0;
}

// Reduces v over the warp with op and gives every lane lane 0's result: a
// fixed tree, so every lane (and every run) sees the same bits.
template <class A, class Op>
NASCENT_D A warp_reduce(A v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  return __shfl_sync(0xffffffffu, v, 0);
}

// The row a warp starts on and the step to its next one.
NASCENT_D int64_t warp_first_row() {
  return int64_t(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
}
NASCENT_D int64_t warp_row_step() {
  return int64_t(gridDim.x) * kWarpRowsPerBlock;
}

// Loads lane `lane`'s vectors (it * 32 + lane) of a row of nvec vectors.
template <int kItems, class T, int V>
NASCENT_D void load_row_warp(Vec<T, V> (&v)[kItems], const T* row, int64_t nvec,
                             int lane) {
  const Vec<T, V>* xr = reinterpret_cast<const Vec<T, V>*>(row);
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * 32 + lane;
    if (j < nvec) v[it] = xr[j];
  }
}

inline unsigned warp_rows_grid(int64_t rows) {
  return unsigned(std::min<int64_t>(
      (rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock, 1 << 20));
}

}  // namespace nascent::cuda
