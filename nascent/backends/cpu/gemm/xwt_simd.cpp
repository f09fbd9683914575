// gemm_xwt: y = x @ W^T for f32 x and f32/f16/bf16 W, one copy per SIMD
// target.
//
// The f32 GEMM's structure (gemm/kernel_simd.cpp) turned around for this shape:
// x is small (a batch of activations) and packed once per call, shared by
// the threads, a KC block of all its rows at a time; W is large (a
// mapped weight matrix) and each thread takes blocks of its rows. A panel of
// NR rows of W by KC is widened to f32 and transposed into the micro-
// kernel's layout (16 KiB, in L1) and used at once against every row tile
// of x (the KC block of x, in L2). So each weight is read and converted
// exactly once per call, the conversion costs 1/m of the arithmetic, and
// nothing is written back to memory but y.
//
// Threads split W's rows into column blocks of y (several per thread,
// claimed in order as threads come free); a block's part of y stays in L2
// across the KC blocks. Sums run over k in the same order whatever the
// thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/gemm/xwt_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>

#include "nascent/backends/cpu/gemm/xwt.h"
#include "nascent/backends/cpu/thread_pool.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/gemm/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// The register tile: kMR rows of x by two vectors of W's rows (12
// accumulators, two B vectors and a broadcast: 15 of AVX2's 16 registers),
// as in gemm/kernel_simd.cpp.
constexpr size_t kMR = 6;
constexpr size_t kNV = 2;
// Depth of a block: a KC x NR panel of W is 16 KiB of f32 on AVX2 (L1
// holds it with the x panel streaming past) and 512 rows of x by KC are
// 512 KiB (L2).
constexpr size_t kKC = 256;
// A column block's part of y at most this big, to stay in L2 beside the
// block of x.
constexpr size_t kYBytes = 256 * 1024;
// Column blocks per thread at least, so that a thread slowed by another
// process leaves blocks to the others.
constexpr size_t kBlocksPerThread = 4;

size_t RoundUp(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

size_t TileCols() {
  return kNV * hn::Lanes(DF());
}

// A buffer of floats, 64-byte aligned, kept by its thread between calls.
struct Buffer {
  hwy::AlignedFreeUniquePtr<float[]> ptr;
  size_t size = 0;
  float* get(size_t n) {
    if (size < n) {
      ptr = hwy::AllocateAligned<float>(n);
      size = n;
    }
    return ptr.get();
  }
};

// Packs rows [i0, i1) of x (i0 a multiple of kMR) into `xp`: KC block b
// (columns [b KC, b KC + kc)) at xp + b KC mp, in it the panel of rows
// [i, i + kMR) at + i kc, row by row (kc values each). Rows past m are 0.
void PackX(const float* x, size_t ldx, size_t m, size_t mp, size_t k, size_t i0,
           size_t i1, float* HWY_RESTRICT xp) {
  const DF d;
  for (size_t pc = 0; pc < k; pc += kKC) {
    const size_t kc = std::min(kKC, k - pc);
    float* block = xp + pc * mp;
    for (size_t i = i0; i < i1; ++i) {
      float* dst = block + i / kMR * kMR * kc + i % kMR * kc;
      if (i < m) {
        ConvertRun(d, x + i * ldx + pc, kc, dst);
      } else {
        std::fill_n(dst, kc, 0.0f);
      }
    }
  }
}

// Packs W rows [j0, j0 + nb) (nb <= NR) by columns [0, kc) into the
// micro-kernel's layout: for each p, the NR values W[j0 .. j0 + NR, p].
// Rows past nb are 0.
template <class S>
void PackW(const S* w, size_t ldw, size_t nb, size_t kc,
           float* HWY_RESTRICT dst) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  const size_t nr = TileCols();
  size_t p = 0;
  if constexpr (CanTranspose(DF())) {
    if (nb == nr && lanes == hn::MaxLanes(d)) {
      for (; p + lanes <= kc; p += lanes) {
        for (size_t v = 0; v < kNV; ++v) {
          TransposeBlock(d, w + v * lanes * ldw + p, int64_t(ldw),
                         dst + p * nr + v * lanes, nr);
        }
      }
    }
  }
  for (; p < kc; ++p) {
    for (size_t j = 0; j < nr; ++j) {
      dst[p * nr + j] = j < nb ? ToCompute(w[j * ldw + p]) : 0.0f;
    }
  }
}

// C[kRows, NR] (+)= x panel (kRows of its kMR rows, kc each) * W panel
// (kc x NR). kRows < kMR serves the last rows of x without computing
// padding.
template <size_t kRows>
HWY_INLINE void MicroKernel(size_t kc, const float* HWY_RESTRICT pa,
                            const float* HWY_RESTRICT pb, float* HWY_RESTRICT c,
                            size_t ldc, bool accumulate) {
  static_assert(kNV == 2 && kRows <= kMR,
                "the kernel is written for 2 vectors");
  const DF d;
  using V = hn::Vec<DF>;
  const size_t lanes = hn::Lanes(d);
  V c0[kRows], c1[kRows];
  for (size_t r = 0; r < kRows; ++r) c0[r] = c1[r] = hn::Zero(d);
  for (size_t p = 0; p < kc; ++p) {
    const V b0 = hn::Load(d, pb);
    const V b1 = hn::Load(d, pb + lanes);
    pb += 2 * lanes;
    for (size_t r = 0; r < kRows; ++r) {
      const V a = hn::Set(d, pa[r * kc + p]);
      c0[r] = hn::MulAdd(a, b0, c0[r]);
      c1[r] = hn::MulAdd(a, b1, c1[r]);
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      c0[r] = hn::Add(c0[r], hn::LoadU(d, row));
      c1[r] = hn::Add(c1[r], hn::LoadU(d, row + lanes));
    }
    hn::StoreU(c0[r], d, row);
    hn::StoreU(c1[r], d, row + lanes);
  }
}

// The kernel for mb (1 to kMR) rows.
HWY_INLINE void RowsKernel(size_t mb, size_t kc, const float* pa,
                           const float* pb, float* c, size_t ldc,
                           bool accumulate) {
  switch (mb) {
    case 6:
      return MicroKernel<6>(kc, pa, pb, c, ldc, accumulate);
    case 5:
      return MicroKernel<5>(kc, pa, pb, c, ldc, accumulate);
    case 4:
      return MicroKernel<4>(kc, pa, pb, c, ldc, accumulate);
    case 3:
      return MicroKernel<3>(kc, pa, pb, c, ldc, accumulate);
    case 2:
      return MicroKernel<2>(kc, pa, pb, c, ldc, accumulate);
    default:
      return MicroKernel<1>(kc, pa, pb, c, ldc, accumulate);
  }
}

// Columns [j0, j1) of y (j0 a multiple of NR) from packed x: for each KC
// block, each NR-row panel of W is packed and run against every row tile.
template <class S>
void ColumnBlock(const float* xp, size_t m, size_t mp, size_t k, const S* w,
                 size_t ldw, float* y, size_t ldy, size_t j0, size_t j1) {
  const size_t nr = TileCols();
  thread_local Buffer panel_buffer;
  float* panel = panel_buffer.get(kKC * nr);
  HWY_ALIGN float tile[kMR * kNV * hn::MaxLanes(DF())];
  const size_t line = 64 / sizeof(S);
  const size_t tiles = mp / kMR;
  for (size_t pc = 0; pc < k; pc += kKC) {
    const size_t kc = std::min(kKC, k - pc);
    const bool accumulate = pc > 0;
    const float* block = xp + pc * mp;
    for (size_t jr = j0; jr < j1; jr += nr) {
      const size_t nb = std::min(nr, j1 - jr);
      PackW(w + jr * ldw + pc, ldw, nb, kc, panel);
      // The next panel's rows of W (from memory: the matrix is far larger
      // than the caches) are fetched a few lines per tile, so that packing
      // it does not wait on one miss after another. After the last panel
      // of a block comes the first of the next KC block.
      const bool last = jr + nr >= j1;
      const size_t nj = last ? j0 : jr + nr, npc = last ? pc + kKC : pc;
      const S* next = w + nj * ldw + npc;
      const size_t row_lines =
          npc < k ? (std::min(kKC, k - npc) + line - 1) / line : 0;
      const size_t total = std::min(nr, j1 - nj) * row_lines;
      const size_t per_tile = (total + tiles - 1) / tiles;
      size_t fetch_row = 0, fetch_line = 0, fetched = 0;
      for (size_t ir = 0; ir < mp; ir += kMR) {
        for (size_t f = 0; f < per_tile && fetched < total; ++f, ++fetched) {
          hwy::Prefetch(next + fetch_row * ldw + fetch_line * line);
          if (++fetch_line == row_lines) fetch_line = 0, ++fetch_row;
        }
        const size_t mb = std::min(kMR, m - ir);
        float* c = y + ir * ldy + jr;
        if (mb == kMR && nb == nr) {
          MicroKernel<kMR>(kc, block + ir * kc, panel, c, ldy, accumulate);
        } else if (nb == nr) {
          RowsKernel(mb, kc, block + ir * kc, panel, c, ldy, accumulate);
        } else {
          // Past W's last row: through a local tile, so that nothing is
          // written past y's n columns.
          RowsKernel(mb, kc, block + ir * kc, panel, tile, nr, false);
          for (size_t i = 0; i < mb; ++i) {
            for (size_t j = 0; j < nb; ++j) {
              const float v = tile[i * nr + j];
              c[i * ldy + j] = accumulate ? c[i * ldy + j] + v : v;
            }
          }
        }
      }
    }
  }
}

template <class S>
void Xwt(const float* x, size_t ldx, const S* w, size_t ldw, float* y,
         size_t ldy, size_t m, size_t n, size_t k) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (size_t i = 0; i < m; ++i) std::fill_n(y + i * ldy, n, 0.0f);
    return;
  }
  const size_t nr = TileCols();
  const size_t mp = RoundUp(m, kMR);
  // x packed by the caller's buffer, which the workers read.
  thread_local Buffer x_buffer;
  float* xp = x_buffer.get(mp * k);
  const size_t xpanels = mp / kMR;
  parallel_for(int64_t(xpanels),
               std::max<int64_t>(1, int64_t(16384 / std::max<size_t>(k, 1))),
               [=](int64_t p0, int64_t p1) {
                 PackX(x, ldx, m, mp, k, size_t(p0) * kMR, size_t(p1) * kMR,
                       xp);
               });
  // Column blocks: as wide as kYBytes of y allows, at least
  // kBlocksPerThread per thread, a multiple of the thread count.
  const size_t panels = (n + nr - 1) / nr;
  const size_t threads = size_t(num_threads());
  const size_t widest = std::max<size_t>(1, kYBytes / (m * sizeof(float)) / nr);
  size_t blocks =
      std::max((panels + widest - 1) / widest, kBlocksPerThread * threads);
  blocks = std::min(panels, RoundUp(blocks, threads));
  parallel_tasks(int(blocks), [&](int b) {
    const size_t j0 = panels * size_t(b) / blocks * nr;
    const size_t j1 = std::min(n, panels * size_t(b + 1) / blocks * nr);
    if (j0 < j1) ColumnBlock(xp, m, mp, k, w, ldw, y, ldy, j0, j1);
  });
}

}  // namespace

void GemmXwt(DType wtype, const float* x, int64_t ldx, const void* w,
             int64_t ldw, float* y, int64_t ldy, int64_t m, int64_t n,
             int64_t k) {
  const auto args = [&](auto* wp) {
    Xwt(x, size_t(ldx), wp, size_t(ldw), y, size_t(ldy), size_t(m), size_t(n),
        size_t(k));
  };
  if (wtype == DType::f16) return args(static_cast<const float16*>(w));
  if (wtype == DType::bf16) return args(static_cast<const bfloat16*>(w));
  return args(static_cast<const float*>(w));
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(GemmXwt);

void gemm_xwt(DType wtype, const float* x, int64_t ldx, const void* w,
              int64_t ldw, float* y, int64_t ldy, int64_t m, int64_t n,
              int64_t k) {
  HWY_DYNAMIC_DISPATCH(GemmXwt)(wtype, x, ldx, w, ldw, y, ldy, m, n, k);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
