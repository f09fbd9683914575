// qmatmul for many x rows (prompt processing): a GEMM in int16 over panels
// of decoded weights; one copy per SIMD target.
//
// The dot-product kernels decode every weight block once per x row; with
// hundreds of rows that decoding is most of the work. Here a panel of NR
// weight rows (two int32 vectors wide) is decoded once into int16 levels
// (k-quant sub-block scales folded in, as in quant/dot_k_simd.cpp), stored as
// pairs of consecutive k interleaved across the NR rows, so that one
// broadcast pair of x levels times one panel vector gives NR partial sums
// (pmaddwd on x86: 16 multiply-adds per instruction, twice an f32 FMA).
// A tile of MR x rows by NR weight rows accumulates in int32 over one scale
// block (32 values, or a 256-value super-block) and then in f32 with the
// block's scales; mins (q4_1, q5_1, q2_K, q4_K, q5_K) are added after, from
// x's per-group sums.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/quant/gemm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <vector>

#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/quant/blocks.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/quant/dot_x86-inl.h"
#include "nascent/backends/cpu/quant/gemm_q8_x86-inl.h"
#include "nascent/backends/cpu/quant/gemm_x86-inl.h"
#include "nascent/backends/cpu/quant/tiles-inl.h"
// After gemm_x86-inl.h, whose panels it multiplies.
#include "nascent/backends/cpu/quant/gemm_vnni_x86-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

// x rows per tile: 10 int32 accumulators, 2 panel vectors, a broadcast and
// a product fill 14 of AVX2's 16 registers (at 6 rows GCC spills).
constexpr int kMR = 5;

// One weight row's block decoded: SB int16 levels whose products with x's
// levels, times `scale` (and x's scale), give the block's dot product, and
// the mins of its groups (value = level * scale - min; q4_1 and q5_1 store
// +m, so their min here is -m).
struct Decoded {
  int16_t levels[256];
  float scale;
  float mins[16];
};

// Widened bytes, split into nibbles, stored as int16 minus `offset`.
HWY_INLINE void StoreNibbles(const uint8_t* qs, int16_t offset, int16_t* lo,
                             int16_t* hi) {
  const DI16 d16;
  const size_t n = hn::Lanes(d16);
  for (size_t j = 0; j < 16; j += n) {
    const auto v = hn::BitCast(d16, LoadBytes(qs + j));
    const auto off = hn::Set(d16, offset);
    hn::StoreU(hn::Sub(hn::And(v, hn::Set(d16, 0xF)), off), d16, lo + j);
    hn::StoreU(hn::Sub(hn::ShiftRight<4>(v), off), d16, hi + j);
  }
}

template <QuantType kType>
HWY_INLINE void Decode(const uint8_t* blk, Decoded& out) {
  int16_t* L = out.levels;
  if constexpr (kType == QuantType::q8_0) {
    out.scale = HalfAt(blk);
    const DI16 d16;
    for (size_t j = 0; j < 32; j += hn::Lanes(d16)) {
      const auto* qs = reinterpret_cast<const int8_t*>(blk + 2 + j);
      hn::StoreU(hn::PromoteTo(d16, hn::LoadU(DI8(), qs)), d16, L + j);
    }
  } else if constexpr (kType == QuantType::q4_0 || kType == QuantType::q4_1) {
    out.scale = HalfAt(blk);
    const bool min = kType == QuantType::q4_1;
    StoreNibbles(blk + (min ? 4 : 2), min ? 0 : 8, L, L + 16);
    if (min) out.mins[0] = -HalfAt(blk + 2);
  } else if constexpr (kType == QuantType::q5_0 || kType == QuantType::q5_1) {
    const bool min = kType == QuantType::q5_1;
    out.scale = HalfAt(blk);
    uint32_t qh;
    std::memcpy(&qh, blk + (min ? 4 : 2), 4);
    StoreNibbles(blk + (min ? 8 : 6), 0, L, L + 16);
    const int16_t off = min ? 0 : 16;
    for (int j = 0; j < 32; ++j) {
      L[j] = int16_t(L[j] + int16_t(((qh >> j) & 1) << 4) - off);
    }
    if (min) out.mins[0] = -HalfAt(blk + 2);
  } else {
    // The k-quants: decode in f32-free integer steps, scales folded in.
    if constexpr (kType == QuantType::q4_k || kType == QuantType::q5_k) {
      // As quant/dot_k_simd.cpp: widened bytes split into nibbles (plus q5_K's
      // fifth bits from qh), times the sub-block scale.
      out.scale = HalfAt(blk);
      const float dmin = HalfAt(blk + 2);
      const uint8_t* qs = blk + (kType == QuantType::q4_k ? 16 : 48);
      int16_t sc[8];
      for (int sb = 0; sb < 8; ++sb) {
        uint8_t scale, m;
        quant::kquant_scale_min(blk + 4, sb, &scale, &m);
        sc[sb] = scale;
        out.mins[sb] = dmin * float(m);
      }
      const DI16 d16;
      const DU16 du;
      const size_t n = hn::Lanes(d16);
      for (size_t j = 0; j < 32; j += n) {
        auto h = hn::Zero(du);
        if constexpr (kType == QuantType::q5_k) h = LoadBytes(blk + 16 + j);
        for (int p = 0; p < 4; ++p) {
          const auto v = LoadBytes(qs + 32 * p + j);
          auto lo = hn::And(v, hn::Set(du, 0xF));
          auto hi = hn::ShiftRight<4>(v);
          if constexpr (kType == QuantType::q5_k) {
            const auto bit4 = hn::Set(du, 16);
            lo = hn::Or(lo, hn::And(hn::ShiftLeft<4>(h), bit4));
            hi = hn::Or(hi, hn::And(hn::ShiftLeft<3>(h), bit4));
            h = hn::ShiftRight<2>(h);
          }
          hn::StoreU(hn::Mul(hn::BitCast(d16, lo), hn::Set(d16, sc[2 * p])),
                     d16, L + 64 * p + j);
          hn::StoreU(hn::Mul(hn::BitCast(d16, hi), hn::Set(d16, sc[2 * p + 1])),
                     d16, L + 64 * p + 32 + j);
        }
      }
    } else if constexpr (kType == QuantType::q6_k) {
      out.scale = HalfAt(blk + 208);
      int16_t sc[16];
      for (int sb = 0; sb < 16; ++sb) sc[sb] = int8_t(blk[192 + sb]);
      const DI16 d16;
      const DU16 du;
      const size_t n = hn::Lanes(d16);
      const auto low4 = hn::Set(du, 0xF), low2 = hn::Set(du, 3);
      const auto bits45 = hn::Set(du, 0x30);
      auto store = [&](hn::Vec<DU16> v, int sb, int16_t* dst) {
        const auto q = hn::Sub(hn::BitCast(d16, v), hn::Set(d16, 32));
        hn::StoreU(hn::Mul(q, hn::Set(d16, sc[sb])), d16, dst);
      };
      for (int h = 0; h < 2; ++h) {
        for (size_t j = 0; j < 32; j += n) {
          const auto a = LoadBytes(blk + 64 * h + j);
          const auto b = LoadBytes(blk + 64 * h + 32 + j);
          const auto hv = LoadBytes(blk + 128 + 32 * h + j);
          const int sb = 8 * h + int(j / 16);
          int16_t* dst = L + 128 * h + j;
          store(hn::Or(hn::And(a, low4), hn::ShiftLeft<4>(hn::And(hv, low2))),
                sb, dst);
          store(hn::Or(hn::And(b, low4), hn::And(hn::ShiftLeft<2>(hv), bits45)),
                sb + 2, dst + 32);
          store(hn::Or(hn::ShiftRight<4>(a), hn::And(hv, bits45)), sb + 4,
                dst + 64);
          store(hn::Or(hn::ShiftRight<4>(b),
                       hn::And(hn::ShiftRight<2>(hv), bits45)),
                sb + 6, dst + 96);
        }
      }
    } else if constexpr (kType == QuantType::q3_k) {
      out.scale = HalfAt(blk + 108);
      for (int s = 0; s < 16; ++s) {
        const int sc = quant::q3k_scale(blk + 96, s) - 32;
        const int l0 = 16 * (s % 2), shift = 2 * (s / 2 % 4), bit = s / 2;
        for (int l = 0; l < 16; ++l) {
          const int q = (blk[32 + 32 * (s / 8) + l0 + l] >> shift) & 3;
          const int h = (blk[l0 + l] >> bit) & 1;
          L[16 * s + l] = int16_t((q + 4 * h - 4) * sc);
        }
      }
    } else if constexpr (kType == QuantType::q2_k) {
      out.scale = HalfAt(blk + 80);
      const float dmin = HalfAt(blk + 82);
      for (int s = 0; s < 16; ++s) {
        out.mins[s] = dmin * float(blk[s] >> 4);
        const int l0 = 16 * (s % 2), shift = 2 * (s / 2 % 4);
        for (int l = 0; l < 16; ++l) {
          const int q = (blk[16 + 32 * (s / 8) + l0 + l] >> shift) & 3;
          L[16 * s + l] = int16_t(q * (blk[s] & 0xF));
        }
      }
    } else {
      static_assert(kType == QuantType::q8_k);
      out.scale = F32At(blk);
      for (int j = 0; j < 256; ++j) L[j] = int8_t(blk[4 + j]);
    }
  }
}

template <QuantType kType>
struct Layout {
  static constexpr bool kK =
      kType == QuantType::q2_k || kType == QuantType::q3_k ||
      kType == QuantType::q4_k || kType == QuantType::q5_k ||
      kType == QuantType::q6_k || kType == QuantType::q8_k;
  static constexpr int64_t kBlock = kK ? 256 : 32;  // Values per scale.
  // Values per min (0: no mins).
  static constexpr int64_t kGroup =
      kType == QuantType::q2_k ? 16
      : kType == QuantType::q4_k || kType == QuantType::q5_k ||
              kType == QuantType::q4_1 || kType == QuantType::q5_1
          ? 32
          : 0;
};

// A weight panel: levels as int32 pairs [k / 2][nr], scales [blocks][nr],
// mins [groups][nr] (value = level * scale - min).
struct Panel {
  hwy::AlignedFreeUniquePtr<int32_t[]> pairs;
  hwy::AlignedFreeUniquePtr<float[]> scales, mins;
  size_t capacity = 0;
};

// sum + the pairwise products of a and b: lane i gains a[2i] b[2i] +
// a[2i+1] b[2i+1]. pmaddwd on x86 (and WASM's dot) makes exactly that;
// NEON's widening multiply-add splits halves instead, so there the
// products are rearranged first.
HWY_INLINE hn::Vec<DI32> PairDot(hn::Vec<DI16> a, hn::Vec<DI16> b,
                                 hn::Vec<DI32> sum) {
  const DI32 d32;
#if HWY_ARCH_X86 || HWY_ARCH_WASM
  auto unused = hn::Zero(d32);
  return hn::ReorderWidenMulAccumulate(d32, a, b, sum, unused);
#else
  auto odd = hn::Zero(d32);
  const auto even =
      hn::ReorderWidenMulAccumulate(d32, a, b, hn::Zero(d32), odd);
  return hn::Add(sum, hn::RearrangeToOddPlusEven(even, odd));
#endif
}

// c [kRows][2 lanes] = the tile's product. The int32 sums of a block live
// in registers; the f32 totals stay in c, in L1, touched once per block.
// The k pairs go 16 at a time, unrolled: a 32-value block's loop would
// otherwise mispredict its exit once per block and tile. x holds the
// tile's rows as level pairs [k / 2][kRows] (one pointer with constant
// offsets: with a pointer per row GCC spilled them and reloaded one per
// broadcast), their scales are at xd [kRows][k / kBlock].
template <int kRows, int64_t kBlock>
HWY_INLINE void TileKernel(const int32_t* pairs, const float* wscale,
                           int64_t nblocks, const int32_t* x, int64_t k,
                           const float* xd, float* c) {
  constexpr int64_t block = kBlock;
  const DI32 d32;
  const DI16 d16;
  const DF df;
  const size_t nl = hn::Lanes(d32);
  using V32 = hn::Vec<DI32>;
  for (int r = 0; r < kRows; ++r) {
    hn::Store(hn::Zero(df), df, c + 2 * r * nl);
    hn::Store(hn::Zero(df), df, c + (2 * r + 1) * nl);
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    V32 s0[kRows], s1[kRows];
    for (int r = 0; r < kRows; ++r) s0[r] = s1[r] = hn::Zero(d32);
    const int32_t* p = pairs + b * (block / 2) * 2 * int64_t(nl);
    const int32_t* xb = x + b * (block / 2) * kRows;
    for (int64_t q0 = 0; q0 < block / 2; q0 += 16) {
#pragma GCC unroll 16
      for (int64_t q = q0; q < q0 + 16; ++q) {
        const int32_t* pq = p + q * 2 * int64_t(nl);
        const auto w0 = hn::BitCast(d16, hn::Load(d32, pq));
        const auto w1 = hn::BitCast(d16, hn::Load(d32, pq + nl));
        for (int r = 0; r < kRows; ++r) {
          const auto a = hn::BitCast(d16, hn::Set(d32, xb[q * kRows + r]));
          s0[r] = PairDot(a, w0, s0[r]);
          s1[r] = PairDot(a, w1, s1[r]);
#if HWY_ARCH_X86 && HWY_COMPILER_GCC_ACTUAL
          // Each sum stays one register updated in place: GCC otherwise
          // reassociates the unrolled adds and spills sums to the stack.
          // (Clang rejects "+x" on 512-bit vectors; the fuzz build uses it.)
          asm("" : "+x"(s0[r].raw), "+x"(s1[r].raw));
#endif
        }
      }
    }
    const auto ws0 = hn::Load(df, wscale + b * 2 * nl);
    const auto ws1 = hn::Load(df, wscale + b * 2 * nl + nl);
    for (int r = 0; r < kRows; ++r) {
      const auto xs = hn::Set(df, xd[r * (k / block) + b]);
      float* c0 = c + 2 * r * nl;
      float* c1 = c0 + nl;
      hn::Store(hn::MulAdd(hn::ConvertTo(df, s0[r]), hn::Mul(ws0, xs),
                           hn::Load(df, c0)),
                df, c0);
      hn::Store(hn::MulAdd(hn::ConvertTo(df, s1[r]), hn::Mul(ws1, xs),
                           hn::Load(df, c1)),
                df, c1);
    }
  }
}

template <QuantType kType>
void GemmRows(const uint8_t* w, int64_t ws, int64_t j0, int64_t j1,
              const QuantizedRows& x, float* y, int64_t ldy) {
#if HWY_TARGET == HWY_SCALAR
  // One-lane vectors cannot hold a pair of int16 levels in an int32 lane,
  // which the panels below are made of: the dot kernels serve every row.
  qdot_rows(kType, w, ws, j0, j1, x, y, ldy);
  return;
#endif
#if NASCENT_QUANT_VNNI
  if constexpr (kType == QuantType::q4_0 || kType == QuantType::q8_0 ||
                kType == QuantType::q4_k || kType == QuantType::q6_k) {
    if (vnni_enabled()) {
      x86::GemmRowsVnni<kType>(w, ws, j0, j1, x, y, ldy);
      return;
    }
  }
#endif
#if NASCENT_QUANT_X86
  if constexpr (kType == QuantType::q4_0 || kType == QuantType::q4_k ||
                kType == QuantType::q6_k) {
    x86::GemmRowsU8<kType>(w, ws, j0, j1, x, y, ldy);
    return;
  }
#endif
  using L = Layout<kType>;
  constexpr int64_t kBytes = kType == QuantType::q4_0   ? 18
                             : kType == QuantType::q4_1 ? 20
                             : kType == QuantType::q5_0 ? 22
                             : kType == QuantType::q5_1 ? 24
                             : kType == QuantType::q8_0 ? 34
                             : kType == QuantType::q2_k ? 84
                             : kType == QuantType::q3_k ? 110
                             : kType == QuantType::q4_k ? 144
                             : kType == QuantType::q5_k ? 176
                             : kType == QuantType::q6_k ? 210
                                                        : 292;
  const int64_t nr = 2 * int64_t(hn::Lanes(DI32()));
  const int64_t k = x.k, nblocks = k / L::kBlock;
  const int64_t ngroups = L::kGroup ? k / L::kGroup : 0;
  thread_local Panel panel;
  const size_t need = size_t(k / 2 * nr);
  if (panel.capacity < need) {
    panel.pairs = hwy::AllocateAligned<int32_t>(need);
    panel.scales = hwy::AllocateAligned<float>(size_t(k / 32 * nr));
    panel.mins = hwy::AllocateAligned<float>(size_t(k / 16 * nr));
    panel.capacity = need;
  }
  int32_t* pairs = panel.pairs.get();
  float* scales = panel.scales.get();
  float* mins = panel.mins.get();
  Decoded dec;
  const std::vector<float> xg = activation_group_terms(x, L::kGroup);
  const auto c = hwy::AllocateAligned<float>(size_t(kMR * nr));
  // x's level pairs tile by tile, [k / 2][rows of the tile], for
  // TileKernel (one copy of x per call, small next to the products).
  thread_local std::vector<int32_t> xpack;
  xpack.resize(size_t(x.rows * (k / 2)));
  for (int64_t m0 = 0; m0 < x.rows; m0 += kMR) {
    const int64_t rows = std::min<int64_t>(kMR, x.rows - m0);
    int32_t* dst = xpack.data() + m0 * (k / 2);
    for (int64_t r = 0; r < rows; ++r) {
      const int16_t* src = x.q + (m0 + r) * k;
      for (int64_t q = 0; q < k / 2; ++q) {
        std::memcpy(dst + q * rows + r, src + 2 * q, 4);
      }
    }
  }
  for (int64_t p0 = j0; p0 < j1; p0 += nr) {
    // Decode and interleave: pair q of row r goes to pairs[q * nr + r].
    // q8_0 on x86 with 16-row panels (AVX2): transposed by vectors.
    bool decoded = false;
#if NASCENT_QUANT_X86
    if constexpr (kType == QuantType::q8_0) {
      if (nr == 16) {
        x86::DecodePanelQ8(w, ws, p0, j1, nblocks, pairs, scales);
        decoded = true;
      }
    }
#endif
    for (int64_t r = 0; r < (decoded ? 0 : nr); ++r) {
      const bool valid = p0 + r < j1;
      const uint8_t* row = w + (p0 + r) * ws;
      for (int64_t b = 0; b < nblocks; ++b) {
        if (valid) {
          Decode<kType>(row + b * kBytes, dec);
        } else {
          std::fill_n(dec.levels, L::kBlock, int16_t(0));
          dec.scale = 0.0f;
          std::fill_n(dec.mins, 16, 0.0f);
        }
        scales[b * nr + r] = dec.scale;
        int32_t* dst = pairs + b * (L::kBlock / 2) * nr + r;
        for (int64_t q = 0; q < L::kBlock / 2; ++q) {
          std::memcpy(dst + q * nr, dec.levels + 2 * q, 4);
        }
        if constexpr (L::kGroup != 0) {
          for (int64_t g = 0; g < L::kBlock / L::kGroup; ++g) {
            mins[(b * (L::kBlock / L::kGroup) + g) * nr + r] = dec.mins[g];
          }
        }
      }
    }
    const int64_t ncols = std::min(nr, j1 - p0);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMR) {
      const int64_t rows = std::min<int64_t>(kMR, x.rows - m0);
      const int32_t* xq = xpack.data() + m0 * (k / 2);
      const float* xd = x.d + m0 * nblocks;
      switch (rows) {
        case 5:
          TileKernel<5, L::kBlock>(pairs, scales, nblocks, xq, k, xd, c.get());
          break;
        case 4:
          TileKernel<4, L::kBlock>(pairs, scales, nblocks, xq, k, xd, c.get());
          break;
        case 3:
          TileKernel<3, L::kBlock>(pairs, scales, nblocks, xq, k, xd, c.get());
          break;
        case 2:
          TileKernel<2, L::kBlock>(pairs, scales, nblocks, xq, k, xd, c.get());
          break;
        default:
          TileKernel<1, L::kBlock>(pairs, scales, nblocks, xq, k, xd, c.get());
          break;
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* cr = c.get() + r * nr;
        if constexpr (L::kGroup != 0) {
          // Minus mins times x's sum over each group (value = level * d -
          // min): a product of depth k / 32, as vectors across the panel.
          const DF df;
          const size_t nl = hn::Lanes(df);
          const float* xgr = xg.data() + (m0 + r) * ngroups;
          auto c0 = hn::Load(df, cr), c1 = hn::Load(df, cr + nl);
          for (int64_t g = 0; g < ngroups; ++g) {
            const auto xs = hn::Set(df, xgr[g]);
            const float* mg = mins + g * nr;
            c0 = hn::NegMulAdd(hn::Load(df, mg), xs, c0);
            c1 = hn::NegMulAdd(hn::Load(df, mg + nl), xs, c1);
          }
          hn::Store(c0, df, cr);
          hn::Store(c1, df, cr + nl);
        }
        for (int64_t j = 0; j < ncols; ++j) y[(m0 + r) * ldy + p0 + j] = cr[j];
      }
    }
  }
}

}  // namespace

void QGemmRows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  switch (type) {
    case QuantType::q4_0:
      return GemmRows<QuantType::q4_0>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q4_1:
      return GemmRows<QuantType::q4_1>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_0:
      return GemmRows<QuantType::q5_0>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_1:
      return GemmRows<QuantType::q5_1>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q8_0:
      return GemmRows<QuantType::q8_0>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q2_k:
      return GemmRows<QuantType::q2_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q3_k:
      return GemmRows<QuantType::q3_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q4_k:
      return GemmRows<QuantType::q4_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_k:
      return GemmRows<QuantType::q5_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q6_k:
      return GemmRows<QuantType::q6_k>(w, ws, j0, j1, x, y, ldy);
    default:
      return GemmRows<QuantType::q8_k>(w, ws, j0, j1, x, y, ldy);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(QGemmRows);

void qgemm_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  HWY_DYNAMIC_DISPATCH(QGemmRows)(type, w, ws, j0, j1, x, y, ldy);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
