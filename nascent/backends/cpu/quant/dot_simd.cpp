// Dot products of x rows with weight rows of the float types (f32, f16,
// bf16) and of the 32-value block types (q4_0, q4_1, q5_0, q5_1, q8_0), and
// the quantization of x for them; one copy per SIMD target.
//
// A block's levels are decoded into int16 lanes (nibbles split after
// widening the bytes, so one widening serves two halves of the block),
// multiply-added with x's int16 levels into int32, and the block's sum is
// scaled in f32 by d_w * d_x. Generation streams W once per token, so these
// loops are what sets its speed: a few vector operations per 16 values.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/quant/dot_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include <hwy/cache_control.h>

#include <cmath>

#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/core/dtype.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/gemm/convert-inl.h"
#include "nascent/backends/cpu/quant/dot_x86-inl.h"
#include "nascent/backends/cpu/quant/tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

// Bit i of lane i, for spreading q5's 32-bit mask of fifth bits to lanes.
alignas(64) constexpr uint16_t kLaneBits[16] = {
    1,   2,   4,    8,    16,   32,   64,    128,
    256, 512, 1024, 2048, 4096, 8192, 16384, 32768};

// 16 in lanes whose bit of `bits` (bit i for lane i) is set, else 0.
HWY_INLINE hn::Vec<DU16> FifthBits(uint32_t bits) {
  const DU16 du;
  const auto lane_bit = hn::LoadU(du, kLaneBits);
  const auto set = hn::TestBit(hn::Set(du, uint16_t(bits)), lane_bit);
  return hn::IfThenElseZero(set, hn::Set(du, 16));
}

// The levels of one 32-value block of 4 (or 5) bits with an offset:
// q4_0 (offset 8), q4_1 (0), q5_0 (16), q5_1 (0). Returns the int32 sum
// of levels times x's levels.
template <bool kFive>
HWY_INLINE hn::Vec<DI32> DotNibbles(const uint8_t* qs, uint32_t qh,
                                    int16_t offset, const int16_t* x) {
  const DI16 d16;
  const DU16 du;
  const size_t n = hn::Lanes(d16);
  auto s0 = hn::Zero(DI32()), s1 = hn::Zero(DI32());
  for (size_t j = 0; j < 16; j += n) {
    const auto v = LoadBytes(qs + j);
    auto lo = hn::And(v, hn::Set(du, 0xF));
    auto hi = hn::ShiftRight<4>(v);
    if constexpr (kFive) {
      lo = hn::Or(lo, FifthBits(qh >> j));
      hi = hn::Or(hi, FifthBits(qh >> (16 + j)));
    }
    const auto off = hn::Set(d16, offset);
    s0 = MulAddPairs(hn::Sub(hn::BitCast(d16, lo), off), x + j, s0, s1);
    s0 = MulAddPairs(hn::Sub(hn::BitCast(d16, hi), off), x + 16 + j, s0, s1);
  }
  return hn::Add(s0, s1);
}

// kRows weight rows (row r at w + r * ws) of nb 32-value blocks . one
// quantized x row, into out[r] (kRows > 1 shares x's loads between rows).
template <QuantType kType, int kRows>
HWY_INLINE void DotBlocks32(const uint8_t* w, int64_t ws, const int16_t* xq,
                            const float* xd, const int32_t* xs, int64_t nb,
                            float* out) {
  const DF df;
  hn::Vec<DF> acc[kRows];
  float mins[kRows];  // Sum of m * x over blocks (types with a min).
  for (int r = 0; r < kRows; ++r) {
    acc[r] = hn::Zero(df);
    mins[r] = 0.0f;
  }
  for (int64_t b = 0; b < nb; ++b) {
    const int16_t* x = xq + 32 * b;
    for (int r = 0; r < kRows; ++r) {
      hn::Vec<DI32> isum;
      float scale = xd[b];
      const uint8_t* row = w + r * ws;
      if constexpr (kType == QuantType::q8_0) {
        const uint8_t* blk = row + 34 * b;
        const DI16 d16;
        const size_t n = hn::Lanes(d16);
        auto s0 = hn::Zero(DI32()), s1 = hn::Zero(DI32());
        const auto* qs = reinterpret_cast<const int8_t*>(blk + 2);
        for (size_t j = 0; j < 32; j += n) {
          s0 = MulAddPairs(hn::PromoteTo(d16, hn::LoadU(DI8(), qs + j)), x + j,
                           s0, s1);
        }
        isum = hn::Add(s0, s1);
        scale *= HalfAt(blk);
      } else if constexpr (kType == QuantType::q4_0) {
        const uint8_t* blk = row + 18 * b;
        isum = DotNibbles<false>(blk + 2, 0, 8, x);
        scale *= HalfAt(blk);
      } else if constexpr (kType == QuantType::q4_1) {
        const uint8_t* blk = row + 20 * b;
        isum = DotNibbles<false>(blk + 4, 0, 0, x);
        scale *= HalfAt(blk);
        mins[r] += HalfAt(blk + 2) * xd[b] * float(xs[2 * b] + xs[2 * b + 1]);
      } else if constexpr (kType == QuantType::q5_0) {
        const uint8_t* blk = row + 22 * b;
        uint32_t qh;
        std::memcpy(&qh, blk + 2, 4);
        isum = DotNibbles<true>(blk + 6, qh, 16, x);
        scale *= HalfAt(blk);
      } else {
        static_assert(kType == QuantType::q5_1);
        const uint8_t* blk = row + 24 * b;
        uint32_t qh;
        std::memcpy(&qh, blk + 4, 4);
        isum = DotNibbles<true>(blk + 8, qh, 0, x);
        scale *= HalfAt(blk);
        mins[r] += HalfAt(blk + 2) * xd[b] * float(xs[2 * b] + xs[2 * b + 1]);
      }
      acc[r] = hn::MulAdd(hn::ConvertTo(df, isum), hn::Set(df, scale), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) out[r] = SumLanes(acc[r]) + mins[r];
}

// Float weights (S = float, float16 or bfloat16) . f32 x. Eight chains of
// multiply-adds (with two, the FMA latency held f16 to ~20 GB/s in cache),
// and each weight line asked for kFloatAhead bytes ahead, as the quantized
// kernels do: streaming the F16 TinyLlama's matrices from the file mapping
// on one thread, this ran ~9-24% faster than four chains without
// prefetching (1 KiB ahead beat 2, 3 and 4 KiB; bench/NOTES.md, session 6).
constexpr int64_t kFloatAhead = 1024;

// kR rows of x (row stride ldx) at once, into out[r]: the eight chains are
// shared out between them, and each weight vector loaded serves every row.
template <class S, int kR>
HWY_INLINE void DotFloat(const S* w, const float* x, int64_t ldx, int64_t k,
                         float* out) {
  const hn::ScalableTag<float> df;
  const int64_t n = int64_t(hn::Lanes(df));
  constexpr int kChains = 8 / kR;  // Per row of x.
  hn::Vec<decltype(df)> a[kR][kChains];
  for (int r = 0; r < kR; ++r) {
    for (int c = 0; c < kChains; ++c) a[r][c] = hn::Zero(df);
  }
  // Bytes of weights per step, and the weight lines to ask for per step.
  const int64_t step = kChains * n * int64_t(sizeof(S));
  const auto* bytes = reinterpret_cast<const uint8_t*>(w);
  int64_t i = 0;
  for (; i + kChains * n <= k; i += kChains * n) {
    const uint8_t* ahead = bytes + i * int64_t(sizeof(S)) + kFloatAhead;
    for (int64_t b = 0; b < step; b += 64) hwy::Prefetch(ahead + b);
    for (int c = 0; c < kChains; ++c) {
      const auto wv = LoadAs(df, w + i + c * n);
      for (int r = 0; r < kR; ++r) {
        a[r][c] =
            hn::MulAdd(wv, hn::LoadU(df, x + r * ldx + i + c * n), a[r][c]);
      }
    }
  }
  for (; i + n <= k; i += n) {
    const auto wv = LoadAs(df, w + i);
    for (int r = 0; r < kR; ++r) {
      a[r][0] = hn::MulAdd(wv, hn::LoadU(df, x + r * ldx + i), a[r][0]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int c = 1; c < kChains; ++c) a[r][0] = hn::Add(a[r][0], a[r][c]);
    float sum = hn::GetLane(hn::SumOfLanes(df, a[r][0]));
    for (int64_t t = i; t < k; ++t) sum += ToCompute(w[t]) * x[r * ldx + t];
    out[r] = sum;
  }
}

// One weight row at a time: a single sequential stream through W, which
// the hardware prefetcher follows best (pairs of rows in lockstep ran at
// half the bandwidth from memory, bench/NOTES.md).
template <QuantType kType>
void DotRows32(const uint8_t* w, int64_t ws, int64_t j0, int64_t j1,
               const QuantizedRows& x, float* y, int64_t ldy) {
  const int64_t nb = x.k / 32;
#if NASCENT_QUANT_X86
  if constexpr (kType == QuantType::q8_0 || kType == QuantType::q4_0) {
    DotTilesOfRows<4>(
        j0, j1, x.rows, y, ldy, [&]<int kR>(int64_t j, int64_t i, float* out) {
          const x86::XRows xr{x.q8 + i * x.k,    x.k, x.d + i * nb, nb,
                              x.sums32 + i * nb, nb};
          if constexpr (kType == QuantType::q8_0) {
            x86::DotQ8_0<kR>(w + j * ws, xr, out);
          } else {
            x86::DotQ4_0<kR>(w + j * ws, xr, out);
          }
        });
    return;
  }
#endif
  DotTiles(j0, j1, x.rows, y, ldy, [&](int64_t j, int64_t i) {
    float out;
    DotBlocks32<kType, 1>(w + j * ws, ws, x.q + i * x.k, x.d + i * nb,
                          x.sums + i * (x.k / 16), nb, &out);
    return out;
  });
}

}  // namespace

void QDotRows32(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  switch (type) {
    case QuantType::q4_0:
      return DotRows32<QuantType::q4_0>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q4_1:
      return DotRows32<QuantType::q4_1>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_0:
      return DotRows32<QuantType::q5_0>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_1:
      return DotRows32<QuantType::q5_1>(w, ws, j0, j1, x, y, ldy);
    default:
      return DotRows32<QuantType::q8_0>(w, ws, j0, j1, x, y, ldy);
  }
}

void FDotRows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
              int64_t j1, const float* x, int64_t m, int64_t k, float* y,
              int64_t ldy) {
  DotTilesOfRows<4>(
      j0, j1, m, y, ldy, [&]<int kR>(int64_t j, int64_t i, float* out) {
        const uint8_t* row = w + j * ws;
        const float* xi = x + i * k;
        if (type == QuantType::f16) {
          DotFloat<float16, kR>(reinterpret_cast<const float16*>(row), xi, k, k,
                                out);
        } else if (type == QuantType::bf16) {
          DotFloat<bfloat16, kR>(reinterpret_cast<const bfloat16*>(row), xi, k,
                                 k, out);
        } else {
          DotFloat<float, kR>(reinterpret_cast<const float*>(row), xi, k, k,
                              out);
        }
      });
}

// Per block of `block` values: d = max |x| / 127, levels round(x / d), and
// the sums of each 16 and each 32 levels (|sum of 32| <= 4064: int16).
void QuantizeActivations(const float* x, int64_t k, int64_t block, int64_t r0,
                         int64_t r1, int16_t* q, float* d, int32_t* sums,
                         int16_t* sums32, int8_t* q8, int16_t* sums16) {
  const DF df;
  const hn::Rebind<int16_t, DF> dh16;
  const hn::Rebind<int8_t, DF> dh8;
  const size_t n = hn::Lanes(df);
  const int64_t nb = k / block;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + r * k + b * block;
      int16_t* qb = q + r * k + b * block;
      auto amax = hn::Zero(df);
      for (int64_t i = 0; i < block; i += int64_t(n)) {
        amax = hn::Max(amax, hn::Abs(hn::LoadU(df, xb + i)));
      }
      const float m = hn::GetLane(hn::MaxOfLanes(df, amax));
      const float scale = m / 127.0f;
      d[r * nb + b] = scale;
      const auto id = hn::Set(df, scale != 0.0f ? 1.0f / scale : 0.0f);
      for (int64_t i = 0; i < block; i += int64_t(n)) {
        const auto levels = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), id));
        hn::StoreU(hn::DemoteTo(dh16, levels), dh16, qb + i);
        hn::StoreU(hn::DemoteTo(dh8, levels), dh8, q8 + r * k + b * block + i);
      }
      for (int64_t s = 0; s < block / 16; ++s) {
        int32_t sum = 0;
        for (int i = 0; i < 16; ++i) sum += qb[16 * s + i];
        sums[r * (k / 16) + b * (block / 16) + s] = sum;
        sums16[r * (k / 16) + b * (block / 16) + s] = int16_t(sum);
      }
      for (int64_t s = 0; s < block / 32; ++s) {
        const int32_t* s16 = sums + r * (k / 16) + b * (block / 16) + 2 * s;
        sums32[r * (k / 32) + b * (block / 32) + s] = int16_t(s16[0] + s16[1]);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(QDotRows32);
HWY_EXPORT(FDotRows);
HWY_EXPORT(QuantizeActivations);

void qdot_rows32(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                 int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  HWY_DYNAMIC_DISPATCH(QDotRows32)(type, w, ws, j0, j1, x, y, ldy);
}

void fdot_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const float* x, int64_t m, int64_t k, float* y,
               int64_t ldy) {
  HWY_DYNAMIC_DISPATCH(FDotRows)(type, w, ws, j0, j1, x, m, k, y, ldy);
}

void quantize_activations(const float* x, int64_t k, int64_t block, int64_t r0,
                          int64_t r1, int16_t* q, float* d, int32_t* sums,
                          int16_t* sums32, int8_t* q8, int16_t* sums16) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)
  (x, k, block, r0, r1, q, d, sums, sums32, q8, sums16);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
