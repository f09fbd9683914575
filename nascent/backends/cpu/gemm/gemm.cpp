// GEMM entry points: m == 1 or n == 1 goes to the matrix-vector kernels
// (gemm/gemv_simd.cpp), split over the output. Otherwise, on several threads:
// - f32 below kFineMacs with at least kGroupPanels panels of columns per
//   thread: one group of columns per thread, each thread packing its
//   group's B privately, the groups cut into row pieces that a thread
//   whose own group is done takes from the others.
// - other f32 with B small enough (packed, at most kSharedBBytes, and n <= NC):
//   all threads pack B together, then compute blocks of rows of C, each
//   packing its own rows of A, all in one pool job. Nothing is packed
//   twice, and the row blocks, more than the threads, balance a thread
//   that starts late.
// - else C is split into blocks (one per thread, two per thread for big
//   products) and each runs the packed single-thread GEMM
//   (gemm/kernel_simd.cpp). Blocks are independent (each task packs its own
//   panels); the price is that A is packed once per column block and B once
//   per row block, which is O(mk + kn) against O(mnk) of arithmetic.
#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/gemm/kernel.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

struct AlignedFree {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(64)); }
};

struct Scratch {
  std::unique_ptr<void, AlignedFree> ptr;
  size_t size = 0;
};

// Below this many multiply-adds a second thread costs more to wake than it
// saves (about 30 us of single-thread work).
constexpr double kParallelMacs = 96.0 * 96.0 * 96.0;
// From this many multiply-adds (~1.5 ms per thread) C is cut into 2 blocks
// per thread: a thread slowed by other processes then leaves an unstarted
// block to the others, for about 2% more packing at 4096 (4 blocks per
// thread would cost 4%).
constexpr double kFineMacs = 512.0 * 512.0 * 512.0;

// Largest B packed once and shared by all threads: 1024 x 1024 f32 (4 MiB,
// in L3) and a bit more. Bigger products have enough rows and columns per
// thread that duplicated packing is cheap.
constexpr size_t kSharedBBytes = 8 << 20;

// Splits m x n into a grid rows x cols of at most `tasks` blocks (the most
// that fit whole tiles), blocks as square as the count allows so that
// packing is least duplicated.
std::pair<int, int> task_grid(int tasks, int64_t m, int64_t n, GemmTile tile) {
  const int64_t max_rows = std::max<int64_t>(1, m / int64_t(tile.mr));
  const int64_t max_cols = std::max<int64_t>(1, n / int64_t(tile.nr));
  for (int count = tasks; count > 1; --count) {
    std::pair<int, int> best{1, 1};
    double best_cost = 1e300;
    for (int rows = 1; rows <= count; ++rows) {
      if (count % rows != 0) continue;
      const int cols = count / rows;
      if (rows > max_rows || cols > max_cols) continue;
      // Perimeter of a block: the data each task packs.
      const double cost = double(m) / rows + double(n) / cols;
      if (cost < best_cost) {
        best_cost = cost;
        best = {rows, cols};
      }
    }
    if (best.first * best.second > 1) return best;
  }
  return {1, 1};
}

// Start of piece `i` of `parts` over [0, total), on multiples of `align`.
int64_t split_point(int64_t total, int parts, int i, int64_t align) {
  if (i >= parts) return total;
  int64_t tiles = (total + align - 1) / align;
  return std::min(total, tiles * i / parts * align);
}

// m == 1 or n == 1 as a matrix-vector product, split over the output.
template <class S, class T, class Gemv>
void gemv_parallel(const GemmArgs& g, const S* a, const S* b, T* c, Gemv gemv) {
  GemvArgs v;
  const S* mat;
  const S* x;
  v.k = g.k;
  v.accumulate = g.accumulate;
  if (g.m == 1) {  // c[0, j] = sum_p a[0, p] b[p, j]: M = B^T.
    mat = b, x = a;
    v.len = g.n, v.si = g.csb, v.sp = g.rsb, v.sx = g.csa, v.sy = 1;
  } else {  // c[i, 0] = sum_p a[i, p] b[p, 0]: M = A.
    mat = a, x = b;
    v.len = g.m, v.si = g.rsa, v.sp = g.csa, v.sx = g.rsb, v.sy = g.ldc;
  }
  // Chunks of at least ~64K multiply-adds.
  const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 16) / g.k);
  parallel_for(v.len, grain, [&](int64_t i0, int64_t i1) {
    GemvArgs part = v;
    part.len = i1 - i0;
    gemv(part, mat + i0 * v.si, x, c + i0 * v.sy);
  });
}

template <class S, class T, class Serial, class Gemv>
void gemm_parallel(const GemmArgs& g, const S* a, const S* b, T* c,
                   GemmTile tile, Serial serial, Gemv gemv) {
  if ((g.m == 1 || g.n == 1) && g.k > 0) {
    gemv_parallel(g, a, b, c, gemv);
    return;
  }
  const int threads = num_threads();
  const double macs = double(g.m) * double(g.n) * double(g.k);
  if (threads <= 1 || macs < kParallelMacs) {
    serial(g, a, b, c);
    return;
  }
  const int tasks = macs >= kFineMacs ? 2 * threads : threads;
  const std::pair<int, int> grid = task_grid(tasks, g.m, g.n, tile);
  const int rows = grid.first, cols = grid.second;
  if (rows * cols <= 1) {
    serial(g, a, b, c);
    return;
  }
  parallel_tasks(rows * cols, [&](int task) {
    const int r = task / cols, q = task % cols;
    const int64_t i0 = split_point(g.m, rows, r, int64_t(tile.mr));
    const int64_t i1 = split_point(g.m, rows, r + 1, int64_t(tile.mr));
    const int64_t j0 = split_point(g.n, cols, q, int64_t(tile.nr));
    const int64_t j1 = split_point(g.n, cols, q + 1, int64_t(tile.nr));
    if (i0 >= i1 || j0 >= j1) return;
    GemmArgs sub = g;
    sub.m = i1 - i0;
    sub.n = j1 - j0;
    serial(sub, a + i0 * g.rsa, b + j0 * g.csb, c + i0 * g.ldc + j0);
  });
}

// Columns per group at least: a narrower group would pack A (whole, once
// per group) for little arithmetic.
constexpr size_t kGroupPanels = 4;

// Calls counted so that a thread knows whether the B group in its buffer
// was packed for the current call.
std::atomic<uint64_t> g_calls{0};

// The f32 path for products below kFineMacs (see the top of the file);
// false when it does not apply. C is cut into one column group per thread,
// each split into row pieces. A thread packs its group's B into its own
// buffer and works through the group's pieces, then takes pieces left in
// the others' groups (packing their B too). Nothing is shared while it is
// written: B packed by one core and read by the other cost a third of
// the time of 256^3 on 2 threads (each packed line fetched back from the
// writer's cache), and waiting for all of B to be packed was a barrier
// that a late thread held up.
bool gemm_column_groups_f32(const GemmArgs& g, const float* a, const float* b,
                            float* c) {
  const int threads = num_threads();
  const double macs = double(g.m) * double(g.n) * double(g.k);
  if (threads <= 1 || macs < kParallelMacs || macs >= kFineMacs || g.k == 0) {
    return false;
  }
  const GemmPlan whole = gemm_plan_f32(g);
  const size_t m = size_t(g.m), n = size_t(g.n);
  const size_t panels = (n + whole.nr - 1) / whole.nr;
  const size_t groups = size_t(threads);
  if (panels < groups * kGroupPanels || m < 4 * whole.mr) return false;
  // The widest group must fit one packed block of B (gemm_rows_f32), of at
  // most kSharedBBytes.
  GemmArgs widest = g;
  widest.n = int64_t((panels + groups - 1) / groups * whole.nr);
  const GemmPlan wp = gemm_plan_f32(widest);
  const size_t wblocks = (size_t(g.k) + wp.kc - 1) / wp.kc;
  if (size_t(widest.n) > wp.nc ||
      wblocks * wp.block_b * sizeof(float) > kSharedBBytes) {
    return false;
  }
  // Pieces of about 8 register rows or more, 4 per group at most: enough
  // for a late thread to find work left, few enough that packing and
  // starting a piece stay small.
  const size_t tiles = (m + whole.mr - 1) / whole.mr;
  const size_t pieces = std::min<size_t>(4, std::max<size_t>(1, tiles / 8));
  std::vector<std::atomic<size_t>> next(groups);
  for (auto& x : next) x.store(0);
  const uint64_t call = g_calls.fetch_add(1) + 1;
  parallel_tasks(int(groups), [&](int task) {
    // The call and group whose B this thread's buffer holds.
    thread_local uint64_t packed_call = 0;
    thread_local size_t packed_group = 0;
    for (size_t s = 0; s < groups; ++s) {
      const size_t q = (size_t(task) + s) % groups;
      const size_t j0 = panels * q / groups * whole.nr;
      const size_t j1 = std::min(n, panels * (q + 1) / groups * whole.nr);
      GemmArgs sub = g;
      sub.n = int64_t(j1 - j0);
      const GemmPlan p = gemm_plan_f32(sub);
      const size_t kblocks = (size_t(g.k) + p.kc - 1) / p.kc;
      float* bp = nullptr;
      for (size_t r; (r = next[q].fetch_add(1)) < pieces;) {
        if (bp == nullptr) {
          bp = static_cast<float*>(gemm_scratch(
              GemmBuffer::packed_b, kblocks * p.block_b * sizeof(float)));
          if (packed_call != call || packed_group != q) {
            packed_call = 0;  // Not valid if packing throws.
            for (size_t kb = 0; kb < kblocks; ++kb) {
              gemm_pack_b_f32(sub, p, kb * p.kc, 0, j1 - j0,
                              b + int64_t(j0) * g.csb, bp + kb * p.block_b);
            }
            packed_call = call;
            packed_group = q;
          }
        }
        const size_t i0 = std::min(m, tiles * r / pieces * p.mr);
        const size_t i1 = std::min(m, tiles * (r + 1) / pieces * p.mr);
        if (i0 < i1) gemm_rows_f32(sub, p, i0, i1, a, bp, c + j0);
      }
    }
  });
  return true;
}

// The f32 path with B packed once (see the top of the file); false when it
// does not apply.
bool gemm_shared_b_f32(const GemmArgs& g, const float* a, const float* b,
                       float* c) {
  const int threads = num_threads();
  const double macs = double(g.m) * double(g.n) * double(g.k);
  if (threads <= 1 || macs < kParallelMacs || g.k == 0) return false;
  const GemmPlan p = gemm_plan_f32(g);
  const size_t k = size_t(g.k), n = size_t(g.n), m = size_t(g.m);
  const size_t kblocks = (k + p.kc - 1) / p.kc;
  if (n > p.nc || kblocks * p.block_b * sizeof(float) > kSharedBBytes) {
    return false;
  }
  // The caller's buffer, shared by the tasks for the duration of the call.
  float* bp = static_cast<float*>(
      gemm_scratch(GemmBuffer::shared_b, kblocks * p.block_b * sizeof(float)));
  // One pool job per call (a job's start and end cost a wake-up and a
  // wait each): first the pieces of B, each KC block in column pieces,
  // about two per thread; then blocks of rows of C, at least two per
  // thread, a multiple of the thread count, none taller than MC. Tasks
  // start in order, so when a row block starts every piece of B has been
  // claimed: it waits only for pieces still being packed.
  const size_t panels = (n + p.nr - 1) / p.nr;
  const size_t pieces = std::min(
      panels,
      std::max<size_t>(1, (2 * size_t(threads) + kblocks - 1) / kblocks));
  const size_t packs = kblocks * pieces;
  const size_t tiles = (m + p.mr - 1) / p.mr;
  size_t per_thread = std::max<size_t>(
      2, ((m + p.mc - 1) / p.mc + size_t(threads) - 1) / size_t(threads));
  const size_t rows = std::min(tiles, per_thread * size_t(threads));
  std::atomic<size_t> packed{0};
  parallel_tasks(int(packs + rows), [&](int task) {
    if (size_t(task) < packs) {
      // Counted even if it throws, so that no row block waits forever
      // (the exception reaches the caller).
      struct Count {
        std::atomic<size_t>& n;
        ~Count() { n.fetch_add(1, std::memory_order_release); }
      } count{packed};
      const size_t block = size_t(task) / pieces;
      const size_t piece = size_t(task) % pieces;
      const size_t j0 = panels * piece / pieces * p.nr;
      const size_t j1 = std::min(n, panels * (piece + 1) / pieces * p.nr);
      if (j0 < j1) {
        gemm_pack_b_f32(g, p, block * p.kc, j0, j1, b, bp + block * p.block_b);
      }
      return;
    }
    while (packed.load(std::memory_order_acquire) < packs) {
      std::this_thread::yield();
    }
    const size_t r = size_t(task) - packs;
    const size_t i0 = std::min(m, tiles * r / rows * p.mr);
    const size_t i1 = std::min(m, tiles * (r + 1) / rows * p.mr);
    if (i0 < i1) gemm_rows_f32(g, p, i0, i1, a, bp, c);
  });
  return true;
}

}  // namespace

void* gemm_scratch(GemmBuffer which, size_t bytes) {
  thread_local std::array<Scratch, 4> buffers;
  Scratch& s = buffers[size_t(which)];
  if (s.size < bytes) {
    s.ptr.reset();
    bytes = (bytes + 4095) / 4096 * 4096;
    s.ptr.reset(::operator new(bytes, std::align_val_t(64)));
    s.size = bytes;
  }
  return s.ptr.get();
}

void gemm_f32(const GemmArgs& g, const float* a, const float* b, float* c) {
  if (g.m > 1 && g.n > 1 &&
      (gemm_column_groups_f32(g, a, b, c) || gemm_shared_b_f32(g, a, b, c))) {
    return;
  }
  gemm_parallel(g, a, b, c, gemm_tile_f32(), gemm_serial_f32, gemv_f32);
}

void gemm_f64(const GemmArgs& g, const double* a, const double* b, double* c) {
  gemm_parallel(g, a, b, c, gemm_tile_f64(), gemm_serial_f64, gemv_f64);
}

void gemm_f16(const GemmArgs& g, const float16* a, const float16* b, float* c) {
  gemm_parallel(g, a, b, c, gemm_tile_f32(), gemm_serial_f16, gemv_f16);
}

void gemm_bf16(const GemmArgs& g, const bfloat16* a, const bfloat16* b,
               float* c) {
  gemm_parallel(g, a, b, c, gemm_tile_f32(), gemm_serial_bf16, gemv_bf16);
}

}  // namespace nascent::cpu
