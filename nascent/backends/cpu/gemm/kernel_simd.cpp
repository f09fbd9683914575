// The packed GEMM of one thread, compiled once per SIMD target (Highway's
// dynamic dispatch picks the best one at run time).
//
// GotoBLAS/BLIS structure: B is packed a KC x NC block at a time into
// column panels NR wide (the block lives in L3, one panel in L1), A an
// MC x KC block at a time into panels of MR rows (the block lives in L2),
// and a micro-kernel keeps an MR x NR tile of C in registers while it walks
// k. Packing reads any strides, converts f16/bf16 to f32, and pads the
// edges with zeros, so the micro-kernel sees one dense layout.
//
// bench/NOTES.md (gemm) has the measurements behind the choices here.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/gemm/kernel_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <type_traits>

#include "nascent/backends/cpu/gemm/kernel.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/gemm/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// The register tile is kMR rows by kNV vectors: 12 accumulators, two B
// vectors and one broadcast A value fill 15 of the 16 registers of
// SSE/AVX2/WASM; FMA latency (4) times FMA ports (2) needs at least 8
// independent accumulators to keep both ports busy.
constexpr size_t kMR = 6;
constexpr size_t kNV = 2;

// Cache blocking for Zen 5 (48 KiB L1d, 1 MiB L2 per core, 32 MiB L3): a
// KC x NR panel of B (16 KiB for f32 and f64 alike, NR halving for f64) and
// a kMR x KC panel of A (6 KiB) stay in L1, an MC x KC block of A (256 KiB)
// in L2 and a KC x NC block of B (4 MiB) in L3. The A and B blocks are
// sized in bytes, MC and NC following from KC.
constexpr size_t kKC = 256;
constexpr size_t kBlockABytes = 256 * 1024;
constexpr size_t kBlockBBytes = 4 * 1024 * 1024;

template <class D>
size_t TileCols(D d) {
  return kNV * hn::Lanes(d);
}

// Distance between packed B panels: a cache line more than the panel, so
// that writing one row into every panel (PackB) does not hit one L1 set.
template <class D>
size_t PanelStride(D d, size_t kc) {
  return kc * TileCols(d) + 64 / sizeof(hn::TFromD<D>);
}

size_t RoundUp(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

// Splits `total` into the fewest pieces of at most `max`, of equal size
// rounded up to `multiple`, so no piece is left nearly empty.
size_t EvenBlock(size_t total, size_t max, size_t multiple) {
  size_t pieces = (total + max - 1) / max;
  return std::min(max, RoundUp((total + pieces - 1) / pieces, multiple));
}

// Packs rows [0, mc) by columns [0, kc) of A into panels of kMR rows, in
// whichever of two layouts makes it a copy: row by row (each row kc
// contiguous values) when A's rows are contiguous, else column by column
// (for each p, the kMR values of that column), which suits a transposed A.
// Rows past mc are zero.
template <class D, class S, class T = hn::TFromD<D>>
void PackA(D d, const S* a, int64_t rs, int64_t cs, size_t mc, size_t kc,
           bool by_columns, T* HWY_RESTRICT dst) {
  if (by_columns) {
    // Walk A's columns (contiguous when A is transposed) front to back,
    // handing each panel its kMR values: the reads stream.
    for (size_t p = 0; p < kc; ++p) {
      const S* col = a + int64_t(p) * cs;
      T* out = dst + p * kMR;
      for (size_t i0 = 0; i0 < mc; i0 += kMR, out += kMR * kc) {
        const size_t mb = std::min(kMR, mc - i0);
        for (size_t i = 0; i < mb; ++i) {
          out[i] = ToCompute(col[int64_t(i0 + i) * rs]);
        }
        for (size_t i = mb; i < kMR; ++i) out[i] = T(0);
      }
    }
    return;
  }
  for (size_t i0 = 0; i0 < mc; i0 += kMR, dst += kMR * kc) {
    const size_t mb = std::min(kMR, mc - i0);
    const S* src = a + int64_t(i0) * rs;
    if (cs == 1) {
      for (size_t i = 0; i < mb; ++i) {
        ConvertRun(d, src + int64_t(i) * rs, kc, dst + i * kc);
      }
    } else {
      for (size_t i = 0; i < mb; ++i) {
        const S* row = src + int64_t(i) * rs;
        for (size_t p = 0; p < kc; ++p) {
          dst[i * kc + p] = ToCompute(row[int64_t(p) * cs]);
        }
      }
    }
    std::fill(dst + mb * kc, dst + kMR * kc, T(0));
  }
}

// Packs rows [0, kc) by columns [0, nc) of B into panels NR columns wide:
// panel r holds, for each p, the NR values B[p, r*NR .. r*NR+NR-1].
// Columns past nc are zero.
template <class D, class S, class T = hn::TFromD<D>>
void PackB(D d, const S* b, int64_t rs, int64_t cs, size_t kc, size_t nc,
           T* HWY_RESTRICT dst) {
  const size_t lanes = hn::Lanes(d);
  const size_t nr = TileCols(d);
  const size_t stride = PanelStride(d, kc);
  const size_t full = cs == 1 ? nc / nr * nr : 0;
  if (full > 0) {
    // Row-major B: walk each row once, front to back, so the reads stream
    // (panel by panel they would jump a whole row per step).
    for (size_t p = 0; p < kc; ++p) {
      const S* row = b + int64_t(p) * rs;
      T* out = dst + p * nr;
      for (size_t j0 = 0; j0 < full; j0 += nr, out += stride) {
        for (size_t v = 0; v < kNV; ++v) {
          hn::Store(LoadAs(d, row + j0 + v * lanes), d, out + v * lanes);
        }
      }
    }
  }
  for (size_t j0 = full; j0 < nc; j0 += nr) {
    const size_t nb = std::min(nr, nc - j0);
    const S* src = b + int64_t(j0) * cs;
    T* out = dst + j0 / nr * stride;
    if (rs == 1) {
      // Transposed B (x @ W^T): each column is contiguous; full panels go
      // through lanes x lanes transposes, the rest element by element.
      size_t p = 0;
      if constexpr (CanTranspose(hn::ScalableTag<T>())) {
        if (nb == nr && lanes == hn::MaxLanes(d)) {
          for (; p + lanes <= kc; p += lanes) {
            for (size_t v = 0; v < kNV; ++v) {
              TransposeBlock(d, src + int64_t(v * lanes) * cs + int64_t(p), cs,
                             out + p * nr + v * lanes, nr);
            }
          }
        }
      }
      for (; p < kc; ++p) {
        for (size_t j = 0; j < nr; ++j) {
          out[p * nr + j] = j < nb ? ToCompute(src[int64_t(j) * cs + p]) : T(0);
        }
      }
    } else {
      for (size_t p = 0; p < kc; ++p) {
        const S* row = src + int64_t(p) * rs;
        for (size_t j = 0; j < nr; ++j) {
          out[p * nr + j] = j < nb ? ToCompute(row[int64_t(j) * cs]) : T(0);
        }
      }
    }
  }
}

// For writing, kept in L2 (and L3), not L1. A compiler builtin: Highway
// 1.0.3's Prefetch only targets L1.
HWY_INLINE void PrefetchL2(const void* p) {
  __builtin_prefetch(p, 1, 2);
}

// For reading soon, into L2 (and L1).
HWY_INLINE void PrefetchRead(const void* p) {
  __builtin_prefetch(p, 0, 3);
}

template <class D, class V = hn::Vec<D>, class T = hn::TFromD<D>>
HWY_INLINE void StoreRow(D d, V x0, V x1, T* HWY_RESTRICT row,
                         bool accumulate) {
  const size_t lanes = hn::Lanes(d);
  if (accumulate) {
    x0 = hn::Add(x0, hn::LoadU(d, row));
    x1 = hn::Add(x1, hn::LoadU(d, row + lanes));
  }
  hn::StoreU(x0, d, row);
  hn::StoreU(x1, d, row + lanes);
}

// C[kMR, NR] (+)= A panel (kMR x kc, by rows `arow` apart or by columns) *
// packed B panel (kc x NR). Named accumulators rather than an array keep the
// tile in registers on every compiler and work with sizeless (SVE, RVV)
// vectors.
template <bool kByColumns, class D, class T = hn::TFromD<D>>
HWY_INLINE void MicroKernel(D d, size_t kc, const T* HWY_RESTRICT pa,
                            size_t arow, const T* HWY_RESTRICT pb,
                            T* HWY_RESTRICT c, size_t ldc, bool accumulate) {
  static_assert(kMR == 6 && kNV == 2, "the kernel body is written for 6x2");
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);
  // C is read at the end; fetching its lines now hides the miss behind
  // the k loop (C is touched once per KC slice, so it is rarely cached).
  for (size_t r = 0; r < kMR; ++r) {
    hwy::Prefetch(c + r * ldc);
    hwy::Prefetch(c + r * ldc + 2 * lanes - 1);
  }
  V c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d),
    c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d),
    c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  // Element (i, p) of the A panel is at i * row + p * step.
  const size_t row = kByColumns ? 1 : arow;
  const size_t step = kByColumns ? kMR : 1;
  const T* HWY_RESTRICT a0 = pa;
  const T* HWY_RESTRICT a1 = pa + row;
  const T* HWY_RESTRICT a2 = pa + 2 * row;
  const T* HWY_RESTRICT a3 = pa + 3 * row;
  const T* HWY_RESTRICT a4 = pa + 4 * row;
  const T* HWY_RESTRICT a5 = pa + 5 * row;
  // One step of k: two B vectors, six broadcast A values, twelve FMAs.
#define NASCENT_GEMM_STEP(u)                              \
  do {                                                    \
    const V b0 = hn::Load(d, pb + (u)*2 * lanes);         \
    const V b1 = hn::Load(d, pb + (u)*2 * lanes + lanes); \
    V a = hn::Set(d, a0[(p + (u)) * step]);               \
    c00 = hn::MulAdd(a, b0, c00);                         \
    c01 = hn::MulAdd(a, b1, c01);                         \
    a = hn::Set(d, a1[(p + (u)) * step]);                 \
    c10 = hn::MulAdd(a, b0, c10);                         \
    c11 = hn::MulAdd(a, b1, c11);                         \
    a = hn::Set(d, a2[(p + (u)) * step]);                 \
    c20 = hn::MulAdd(a, b0, c20);                         \
    c21 = hn::MulAdd(a, b1, c21);                         \
    a = hn::Set(d, a3[(p + (u)) * step]);                 \
    c30 = hn::MulAdd(a, b0, c30);                         \
    c31 = hn::MulAdd(a, b1, c31);                         \
    a = hn::Set(d, a4[(p + (u)) * step]);                 \
    c40 = hn::MulAdd(a, b0, c40);                         \
    c41 = hn::MulAdd(a, b1, c41);                         \
    a = hn::Set(d, a5[(p + (u)) * step]);                 \
    c50 = hn::MulAdd(a, b0, c50);                         \
    c51 = hn::MulAdd(a, b1, c51);                         \
  } while (0)
  for (size_t p = 0; p < kc; ++p) {
    NASCENT_GEMM_STEP(0);
    pb += 2 * lanes;
  }
#undef NASCENT_GEMM_STEP
  StoreRow(d, c00, c01, c, accumulate);
  StoreRow(d, c10, c11, c + ldc, accumulate);
  StoreRow(d, c20, c21, c + 2 * ldc, accumulate);
  StoreRow(d, c30, c31, c + 3 * ldc, accumulate);
  StoreRow(d, c40, c41, c + 4 * ldc, accumulate);
  StoreRow(d, c50, c51, c + 5 * ldc, accumulate);
}

// B panels that one pass down the A block multiplies, each A panel against
// all of them in turn, so that C is walked kBPanels lines along each row
// before the next six rows (one panel per pass touched 6 new rows, at
// 4096^3 6 new pages 16 KiB apart in memory, per 16 columns). 3 per pass
// measured +2-6% at 4096^3 on one thread (best of 4-6 calls, CPU time,
// interleaved with 1 per pass), no change at 256 and 1024. The cause is
// not measured (no hardware counters here): a C row stride of 4096 + 16
// floats gave about the same gain once, not in later runs.
constexpr size_t kBPanels = 3;

// C[mc, nc] (+)= A block * packed B block, tile by tile. The A block is
// packed (rows kc apart, or by columns), or read in place with rows `arow`
// apart and its last partial panel packed in `tail` (rows kc apart). Edge
// tiles go through a local tile so the kernel never writes outside C.
template <bool kByColumns, class D, class T = hn::TFromD<D>>
void MacroKernel(D d, size_t mc, size_t nc, size_t kc, const T* ap, size_t arow,
                 const T* tail, const T* bp, T* c, size_t ldc,
                 bool accumulate) {
  const size_t nr = TileCols(d);
  HWY_ALIGN T tile[kMR * kNV * hn::MaxLanes(d)];
  const size_t stride = PanelStride(d, kc);
  // While one pass's B panels are in use, the next pass's are fetched a
  // slice per tile, so that they are in cache when their turn comes (they
  // would otherwise come from L3 or memory, one miss at a time, in the
  // first tile of each panel).
  const size_t line = 64 / sizeof(T);
  const size_t tiles = (mc + kMR - 1) / kMR;
  const size_t panels = (nc + nr - 1) / nr;
  const size_t slice = (kBPanels * kc * nr / line + tiles - 1) / tiles * line;
  for (size_t jg = 0; jg < nc; jg += kBPanels * nr) {
    const size_t gp = std::min(kBPanels, panels - jg / nr);
    const T* bgroup = bp + jg / nr * stride;
    const T* bnext = bgroup + gp * stride;
    const size_t next_len = std::min(kBPanels, panels - jg / nr - gp) * stride;
    for (size_t ir = 0, t = 0; ir < mc; ir += kMR, ++t) {
      for (size_t o = t * slice; o < (t + 1) * slice && o < next_len;
           o += line) {
        hwy::Prefetch(bnext + o);
      }
      // The next tile row's C goes to L2 a whole tile row ahead: from
      // memory it would stall the loads at the end of the tile, and into L1
      // its rows (a power-of-two stride apart) would evict the B panels.
      const size_t nir = ir + kMR < mc ? ir + kMR : 0;
      const size_t njr = ir + kMR < mc ? jg : jg + kBPanels * nr;
      if (njr < nc) {
        const size_t nw = std::min(kBPanels * nr, nc - njr);
        for (size_t r = 0; r < kMR && nir + r < mc; ++r) {
          for (size_t o = 0; o < nw; o += line) {
            PrefetchL2(c + (nir + r) * ldc + njr + o);
          }
          PrefetchL2(c + (nir + r) * ldc + njr + nw - 1);
        }
      }
      const size_t mb = std::min(kMR, mc - ir);
      const bool in_tail = tail != nullptr && mb < kMR;
      const T* apanel = in_tail ? tail : ap + ir * (kByColumns ? kc : arow);
      const size_t row = in_tail ? kc : arow;
      for (size_t q = 0; q < gp; ++q) {
        const size_t jr = jg + q * nr;
        const size_t nb = std::min(nr, nc - jr);
        const T* bpanel = bgroup + q * stride;
        T* ct = c + ir * ldc + jr;
        if (mb == kMR && nb == nr) {
          MicroKernel<kByColumns>(d, kc, apanel, row, bpanel, ct, ldc,
                                  accumulate);
          continue;
        }
        MicroKernel<kByColumns>(d, kc, apanel, row, bpanel, tile, nr, false);
        for (size_t i = 0; i < mb; ++i) {
          for (size_t j = 0; j < nb; ++j) {
            const T v = tile[i * nr + j];
            ct[i * ldc + j] = accumulate ? ct[i * ldc + j] + v : v;
          }
        }
      }
    }
  }
}

// x @ W^T with few rows of x (a batch through a Linear layer): A's rows and
// B's columns are both contiguous along k, so C is a grid of dot products
// and nothing needs packing. The packed path would copy and transpose all
// of W (often out of cache: the optimizer has just rewritten it) for only
// m / kMR uses of each panel; here W streams through once, in order, a few
// rows at a time, against the rows of x, which stay in L2.
constexpr size_t kDotRows = 4;  // 12 accumulators, 7 loads per 12 FMAs.
constexpr size_t kDotCols = 3;
constexpr int64_t kDotMaxRows = 96;
constexpr size_t kDotMaxBytesA = 512 * 1024;  // Of A, to stay in L2.
// Below kDotMinDepth each tile's 12 horizontal sums weigh on few
// multiply-adds, and with many columns the packed path wins: conv2's
// weight gradient (per image 64 x 288 x 196, B^T; conv_bench, batch 64,
// one thread) took 9.2 ms packed against 14.6 here. With few columns this
// path still wins: sending every k < 256 to the packed path cost the MLP
// ~10% (train_bench mlp, one thread, 16.3k against 18.0k images/s).
constexpr int64_t kDotMinDepth = 256;
constexpr int64_t kDotShallowMaxCols = 128;

bool UseDot(const GemmArgs& g) {
  return g.csa == 1 && g.rsb == 1 && g.m <= kDotMaxRows &&
         g.n >= int64_t(kDotCols) && g.k >= 64 &&
         (g.k >= kDotMinDepth || g.n <= kDotShallowMaxCols) &&
         size_t(g.m * g.k) * sizeof(float) <= kDotMaxBytesA;
}

// The kDotRows x kDotCols dot products of rows x0..x3 with w0..w2, each k
// long, into s (row-major).
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void DotTile(D d, size_t k, const T* HWY_RESTRICT x0,
                        const T* HWY_RESTRICT x1, const T* HWY_RESTRICT x2,
                        const T* HWY_RESTRICT x3, const T* HWY_RESTRICT w0,
                        const T* HWY_RESTRICT w1, const T* HWY_RESTRICT w2,
                        T* HWY_RESTRICT s) {
  static_assert(kDotRows == 4 && kDotCols == 3, "written for 4x3");
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);
  V c00 = hn::Zero(d), c01 = hn::Zero(d), c02 = hn::Zero(d), c10 = hn::Zero(d),
    c11 = hn::Zero(d), c12 = hn::Zero(d), c20 = hn::Zero(d), c21 = hn::Zero(d),
    c22 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d), c32 = hn::Zero(d);
  size_t p = 0;
  for (; p + lanes <= k; p += lanes) {
    const V b0 = hn::LoadU(d, w0 + p), b1 = hn::LoadU(d, w1 + p),
            b2 = hn::LoadU(d, w2 + p);
    V a = hn::LoadU(d, x0 + p);
    c00 = hn::MulAdd(a, b0, c00);
    c01 = hn::MulAdd(a, b1, c01);
    c02 = hn::MulAdd(a, b2, c02);
    a = hn::LoadU(d, x1 + p);
    c10 = hn::MulAdd(a, b0, c10);
    c11 = hn::MulAdd(a, b1, c11);
    c12 = hn::MulAdd(a, b2, c12);
    a = hn::LoadU(d, x2 + p);
    c20 = hn::MulAdd(a, b0, c20);
    c21 = hn::MulAdd(a, b1, c21);
    c22 = hn::MulAdd(a, b2, c22);
    a = hn::LoadU(d, x3 + p);
    c30 = hn::MulAdd(a, b0, c30);
    c31 = hn::MulAdd(a, b1, c31);
    c32 = hn::MulAdd(a, b2, c32);
  }
  auto sum = [&](V v) { return hn::GetLane(hn::SumOfLanes(d, v)); };
  s[0] = sum(c00), s[1] = sum(c01), s[2] = sum(c02);
  s[3] = sum(c10), s[4] = sum(c11), s[5] = sum(c12);
  s[6] = sum(c20), s[7] = sum(c21), s[8] = sum(c22);
  s[9] = sum(c30), s[10] = sum(c31), s[11] = sum(c32);
  for (; p < k; ++p) {  // The last k % lanes terms.
    const T* xs[kDotRows] = {x0, x1, x2, x3};
    const T ws[kDotCols] = {w0[p], w1[p], w2[p]};
    for (size_t r = 0; r < kDotRows; ++r) {
      for (size_t q = 0; q < kDotCols; ++q)
        s[r * kDotCols + q] += xs[r][p] * ws[q];
    }
  }
}

// C (+)= A B by DotTile: blocks of kDotCols columns of B (rows of W) in the
// outer loop, so each is read from memory once and stays in L1 while the
// rows of A pass by. Edge tiles repeat their last row or column (computed,
// not stored), so every tile runs the same kernel.
void GemmDot(const GemmArgs& g, const float* a, const float* b, float* c) {
  const hn::ScalableTag<float> d;
  const size_t m = size_t(g.m), n = size_t(g.n), k = size_t(g.k);
  const size_t ldc = size_t(g.ldc);
  HWY_ALIGN float s[kDotRows * kDotCols];
  // While one block of W's rows is in use, the next is fetched a slice per
  // tile: each row is a new stream that the hardware prefetcher would only
  // pick up after several misses, and the rows come from memory.
  const size_t line = 64 / sizeof(float);
  const size_t row_lines = (k + line - 1) / line;
  const size_t tiles = (m + kDotRows - 1) / kDotRows;
  const size_t slice = (kDotCols * row_lines + tiles - 1) / tiles;
  for (size_t j0 = 0; j0 < n; j0 += kDotCols) {
    const size_t nb = std::min(kDotCols, n - j0);
    const float* w[kDotCols];
    for (size_t q = 0; q < kDotCols; ++q) {
      w[q] = b + int64_t(j0 + std::min(q, nb - 1)) * g.csb;
    }
    // Cursor into the next block: its row q and the line within the row
    // (a counter, not a division per line, which cost more than the loads).
    size_t pq = 0, pl = 0;
    for (size_t i0 = 0; i0 < m; i0 += kDotRows) {
      for (size_t f = 0; f < slice && pq < kDotCols; ++f) {
        const size_t j = j0 + kDotCols + pq;
        if (j >= n) {
          pq = kDotCols;
          break;
        }
        PrefetchRead(b + int64_t(j) * g.csb + int64_t(pl * line));
        if (++pl == row_lines) {
          pl = 0;
          ++pq;
        }
      }
      const size_t mb = std::min(kDotRows, m - i0);
      const float* x[kDotRows];
      for (size_t r = 0; r < kDotRows; ++r) {
        x[r] = a + int64_t(i0 + std::min(r, mb - 1)) * g.rsa;
      }
      DotTile(d, k, x[0], x[1], x[2], x[3], w[0], w[1], w[2], s);
      for (size_t r = 0; r < mb; ++r) {
        float* row = c + (i0 + r) * ldc + j0;
        for (size_t q = 0; q < nb; ++q) {
          const float v = s[r * kDotCols + q];
          row[q] = g.accumulate ? row[q] + v : v;
        }
      }
    }
  }
}

// Block sizes of a product: KC, MC and NC as even splits of k, m and n.
template <class T>
GemmPlan MakePlan(size_t m, size_t n, size_t k) {
  const hn::ScalableTag<T> d;
  GemmPlan p;
  p.mr = kMR;
  p.nr = TileCols(d);
  p.kc = EvenBlock(k, kKC, 1);
  p.mc = EvenBlock(
      m, std::max(kMR, kBlockABytes / (p.kc * sizeof(T)) / kMR * kMR), kMR);
  p.nc = EvenBlock(
      n, std::max(p.nr, kBlockBBytes / (p.kc * sizeof(T)) / p.nr * p.nr), p.nr);
  p.block_b = RoundUp(p.nc, p.nr) / p.nr * PanelStride(d, p.kc);
  return p;
}

// Packs columns [j0, j1) (j0 a multiple of NR) of the KC x NC block of B
// at (pc, jc) into its packed block `bp`, laid out as PackB lays it out.
template <class S, class T>
void PackBPart(const GemmArgs& g, const GemmPlan& p, size_t pc, size_t jc,
               size_t j0, size_t j1, const S* b, T* bp) {
  const hn::ScalableTag<T> d;
  const size_t kc = std::min(p.kc, size_t(g.k) - pc);
  PackB(d, b + int64_t(pc) * g.rsb + int64_t(jc + j0) * g.csb, g.rsb, g.csb, kc,
        j1 - j0, bp + j0 / p.nr * PanelStride(d, kc));
}

// A block whose rows are already KC values apart, contiguous (a row-major
// A with k <= KC, lda == k), is read in place: packing would copy it into
// the same layout. Only its last, partial panel of rows (zero-padded to
// kMR) is packed. Other strides stay packed: read in place at 520, 1000 and
// 2000 (rows 2-8 KiB apart) the kernel ran 4-8% slower than packing costs.
template <class S, class T>
bool ReadAInPlace(const GemmArgs& g, size_t kc) {
  return std::is_same_v<S, T> && g.csa == 1 && g.rsa == int64_t(kc);
}

// C[ic.., jc..] (+)= A rows [ic, ic + mc) times the packed KC x NC block
// of B at (pc, jc).
template <class S, class T>
void MultiplyBlock(const GemmArgs& g, const GemmPlan& p, size_t ic, size_t mc,
                   size_t pc, size_t jc, const S* a, const T* bp, T* ap, T* c) {
  const hn::ScalableTag<T> d;
  const size_t kc = std::min(p.kc, size_t(g.k) - pc);
  const size_t nc = std::min(p.nc, size_t(g.n) - jc);
  const size_t ldc = size_t(g.ldc);
  // A transposed (columns contiguous) packs by columns, anything else by rows.
  const bool by_columns = g.rsa == 1 && g.csa != 1;
  const bool accumulate = g.accumulate || pc > 0;
  const S* ablock = a + int64_t(ic) * g.rsa + int64_t(pc) * g.csa;
  if (ReadAInPlace<S, T>(g, kc)) {
    const size_t full = mc / kMR * kMR;
    const T* tail = nullptr;
    if (full < mc) {
      PackA(d, ablock + int64_t(full) * g.rsa, g.rsa, g.csa, mc - full, kc,
            false, ap);
      tail = ap;
    }
    MacroKernel<false>(d, mc, nc, kc, reinterpret_cast<const T*>(ablock),
                       size_t(g.rsa), tail, bp, c + ic * ldc + jc, ldc,
                       accumulate);
    return;
  }
  PackA(d, ablock, g.rsa, g.csa, mc, kc, by_columns, ap);
  if (by_columns) {
    MacroKernel<true>(d, mc, nc, kc, ap, 1, static_cast<const T*>(nullptr), bp,
                      c + ic * ldc + jc, ldc, accumulate);
  } else {
    MacroKernel<false>(d, mc, nc, kc, ap, kc, static_cast<const T*>(nullptr),
                       bp, c + ic * ldc + jc, ldc, accumulate);
  }
}

template <class T>
T* PackedA(const GemmPlan& p) {
  return static_cast<T*>(gemm_scratch(GemmBuffer::packed_a,
                                      RoundUp(p.mc, kMR) * p.kc * sizeof(T)));
}

// k == 0: C = 0, or untouched when accumulating.
template <class T>
void ZeroC(const GemmArgs& g, T* c) {
  if (g.accumulate) return;
  for (int64_t i = 0; i < g.m; ++i) std::fill_n(c + i * g.ldc, g.n, T(0));
}

template <class S, class T>
void GemmSerial(const GemmArgs& g, const S* a, const S* b, T* c) {
  const size_t m = size_t(g.m), n = size_t(g.n), k = size_t(g.k);
  if (m == 0 || n == 0) return;
  if (k == 0) return ZeroC(g, c);
  if constexpr (std::is_same_v<S, float>) {
    if (UseDot(g)) return GemmDot(g, a, b, c);
  }
  const GemmPlan p = MakePlan<T>(m, n, k);
  T* ap = PackedA<T>(p);
  T* bp = static_cast<T*>(
      gemm_scratch(GemmBuffer::packed_b, p.block_b * sizeof(T)));
  for (size_t jc = 0; jc < n; jc += p.nc) {
    for (size_t pc = 0; pc < k; pc += p.kc) {
      PackBPart(g, p, pc, jc, 0, std::min(p.nc, n - jc), b, bp);
      for (size_t ic = 0; ic < m; ic += p.mc) {
        MultiplyBlock(g, p, ic, std::min(p.mc, m - ic), pc, jc, a, bp, ap, c);
      }
    }
  }
}

// Rows [i0, i1) of C from B packed whole (n <= NC): one task of a
// multithreaded GEMM.
template <class S, class T>
void GemmRows(const GemmArgs& g, const GemmPlan& p, size_t i0, size_t i1,
              const S* a, const T* bp, T* c) {
  if (g.k == 0) {
    GemmArgs rows = g;
    rows.m = int64_t(i1 - i0);
    return ZeroC(rows, c + i0 * size_t(g.ldc));
  }
  T* ap = PackedA<T>(p);
  const size_t mc_max = EvenBlock(i1 - i0, p.mc, kMR);
  for (size_t pc = 0, block = 0; pc < size_t(g.k); pc += p.kc, ++block) {
    for (size_t ic = i0; ic < i1; ic += mc_max) {
      MultiplyBlock(g, p, ic, std::min(mc_max, i1 - ic), pc, 0, a,
                    bp + block * p.block_b, ap, c);
    }
  }
}

}  // namespace

void GemmSerialF32(const GemmArgs& g, const float* a, const float* b,
                   float* c) {
  GemmSerial(g, a, b, c);
}
#if HWY_HAVE_FLOAT64
void GemmSerialF64(const GemmArgs& g, const double* a, const double* b,
                   double* c) {
  GemmSerial(g, a, b, c);
}
GemmTile GemmTileF64() {
  return {kMR, TileCols(hn::ScalableTag<double>())};
}
#else
// No f64 vectors on this target (WASM SIMD128 in Highway 1.0.3): a plain
// loop nest, rows of C updated from rows of B.
void GemmSerialF64(const GemmArgs& g, const double* a, const double* b,
                   double* c) {
  for (int64_t i = 0; i < g.m; ++i) {
    double* row = c + i * g.ldc;
    if (!g.accumulate) std::fill_n(row, g.n, 0.0);
    for (int64_t p = 0; p < g.k; ++p) {
      const double av = a[i * g.rsa + p * g.csa];
      const double* brow = b + p * g.rsb;
      for (int64_t j = 0; j < g.n; ++j) row[j] += av * brow[j * g.csb];
    }
  }
}
GemmTile GemmTileF64() {
  return {1, 1};
}
#endif
void GemmSerialF16(const GemmArgs& g, const float16* a, const float16* b,
                   float* c) {
  GemmSerial(g, a, b, c);
}
void GemmSerialBF16(const GemmArgs& g, const bfloat16* a, const bfloat16* b,
                    float* c) {
  GemmSerial(g, a, b, c);
}
GemmTile GemmTileF32() {
  return {kMR, TileCols(hn::ScalableTag<float>())};
}
GemmPlan GemmPlanF32(const GemmArgs& g) {
  return MakePlan<float>(size_t(g.m), size_t(g.n), size_t(g.k));
}
void GemmPackBF32(const GemmArgs& g, const GemmPlan& p, size_t pc, size_t j0,
                  size_t j1, const float* b, float* bp) {
  PackBPart(g, p, pc, 0, j0, j1, b, bp);
}
void GemmRowsF32(const GemmArgs& g, const GemmPlan& p, size_t i0, size_t i1,
                 const float* a, const float* bp, float* c) {
  GemmRows(g, p, i0, i1, a, bp, c);
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(GemmSerialF32);
HWY_EXPORT(GemmSerialF64);
HWY_EXPORT(GemmSerialF16);
HWY_EXPORT(GemmSerialBF16);
HWY_EXPORT(GemmTileF32);
HWY_EXPORT(GemmTileF64);
HWY_EXPORT(GemmPlanF32);
HWY_EXPORT(GemmPackBF32);
HWY_EXPORT(GemmRowsF32);

void gemm_serial_f32(const GemmArgs& g, const float* a, const float* b,
                     float* c) {
  HWY_DYNAMIC_DISPATCH(GemmSerialF32)(g, a, b, c);
}
void gemm_serial_f64(const GemmArgs& g, const double* a, const double* b,
                     double* c) {
  HWY_DYNAMIC_DISPATCH(GemmSerialF64)(g, a, b, c);
}
void gemm_serial_f16(const GemmArgs& g, const float16* a, const float16* b,
                     float* c) {
  HWY_DYNAMIC_DISPATCH(GemmSerialF16)(g, a, b, c);
}
void gemm_serial_bf16(const GemmArgs& g, const bfloat16* a, const bfloat16* b,
                      float* c) {
  HWY_DYNAMIC_DISPATCH(GemmSerialBF16)(g, a, b, c);
}
GemmTile gemm_tile_f32() {
  return HWY_DYNAMIC_DISPATCH(GemmTileF32)();
}
GemmTile gemm_tile_f64() {
  return HWY_DYNAMIC_DISPATCH(GemmTileF64)();
}
GemmPlan gemm_plan_f32(const GemmArgs& g) {
  return HWY_DYNAMIC_DISPATCH(GemmPlanF32)(g);
}
void gemm_pack_b_f32(const GemmArgs& g, const GemmPlan& p, size_t pc, size_t j0,
                     size_t j1, const float* b, float* bp) {
  HWY_DYNAMIC_DISPATCH(GemmPackBF32)(g, p, pc, j0, j1, b, bp);
}
void gemm_rows_f32(const GemmArgs& g, const GemmPlan& p, size_t i0, size_t i1,
                   const float* a, const float* bp, float* c) {
  HWY_DYNAMIC_DISPATCH(GemmRowsF32)(g, p, i0, i1, a, bp, c);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
