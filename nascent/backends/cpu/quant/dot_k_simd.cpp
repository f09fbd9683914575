// Dot products of weight rows of the k-quants (q2_K .. q6_K, q8_K) with x
// rows quantized in blocks of 256; one copy per SIMD target.
//
// Within a super-block every sub-block scale is a small integer, so the
// decoded levels are multiplied by it in int16 (at most 63 * 31 for q5_K,
// 128 * 32 for q6_K) and the whole super-block sums in one int32 vector
// (below 2^31: 256 values of at most 4096 * 127). The f32 scale d * d_x is
// applied once per 256 values; the mins (q2_K, q4_K, q5_K) meet x through
// its sums of 16 levels, in scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/quant/dot_k_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/quant/blocks.h"
// Per-target helpers; must come after highway.h.
#include "nascent/backends/cpu/quant/dot_x86-inl.h"
#include "nascent/backends/cpu/quant/tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace {

using VI16 = hn::Vec<DI16>;
using VI32 = hn::Vec<DI32>;
using VU16 = hn::Vec<DU16>;

HWY_INLINE VI16 Scaled(VU16 levels, int16_t scale) {
  return hn::Mul(hn::BitCast(DI16(), levels), hn::Set(DI16(), scale));
}

// The 8 scales and mins of a q4_K / q5_K block, unpacked 4 at a time from
// 32-bit words (the layout of kquant_scale_min).
HWY_INLINE void ScaleMins(const uint8_t* packed, uint8_t* sc, uint8_t* m) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t s_lo = u[0] & low6, m_lo = u[1] & low6;
  const uint32_t s_hi = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
  const uint32_t m_hi = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
  std::memcpy(sc, &s_lo, 4);
  std::memcpy(sc + 4, &s_hi, 4);
  std::memcpy(m, &m_lo, 4);
  std::memcpy(m + 4, &m_hi, 4);
}

// One super-block; x points at its 256 levels, xs at its 16 sums.
// Returns the int32 vector of sum(level * scale * x) and sets *mins to
// sum(min * x sums) (0 for types without mins).
// sum of m[i] * s[i] over 8 lanes (the mins of q4_K/q5_K times x's sums).
HWY_INLINE int32_t Dot8(const uint8_t* m, const int16_t* s) {
  const hn::CappedTag<int16_t, 8> d8;
  const hn::Repartition<int32_t, decltype(d8)> d8w;
  const hn::Rebind<uint8_t, decltype(d8)> du8;
  auto sum0 = hn::Zero(d8w), sum1 = hn::Zero(d8w);
  for (size_t i = 0; i < 8; i += hn::Lanes(d8)) {
    const auto mv =
        hn::BitCast(d8, hn::PromoteTo(hn::RebindToUnsigned<decltype(d8)>(),
                                      hn::LoadU(du8, m + i)));
    sum0 = hn::ReorderWidenMulAccumulate(d8w, mv, hn::LoadU(d8, s + i), sum0,
                                         sum1);
  }
  return hn::GetLane(hn::SumOfLanes(d8w, hn::Add(sum0, sum1)));
}

template <QuantType kType>
HWY_INLINE VI32 SuperBlock(const uint8_t* blk, const int16_t* x,
                           const int32_t* xs, const int16_t* xs32,
                           int32_t* mins) {
  const DU16 du;
  const DI16 d16;
  const size_t n = hn::Lanes(d16);
  VI32 s0 = hn::Zero(DI32()), s1 = hn::Zero(DI32());
  const auto low2 = hn::Set(du, 3), low4 = hn::Set(du, 0xF);
  *mins = 0;
  if constexpr (kType == QuantType::q4_k || kType == QuantType::q5_k) {
    uint8_t sc8[8], m[8];
    ScaleMins(blk + 4, sc8, m);
    *mins = Dot8(m, xs32);
    // As int16 in memory, so that each Set below is one broadcast load.
    int16_t sc[8];
    for (int s = 0; s < 8; ++s) sc[s] = sc8[s];
    const uint8_t* qs = blk + (kType == QuantType::q4_k ? 16 : 48);
    for (size_t j = 0; j < 32; j += n) {
      VU16 h = hn::Zero(du);
      if constexpr (kType == QuantType::q5_k) h = LoadBytes(blk + 16 + j);
      for (int p = 0; p < 4; ++p) {
        const auto v = LoadBytes(qs + 32 * p + j);
        auto lo = hn::And(v, low4), hi = hn::ShiftRight<4>(v);
        if constexpr (kType == QuantType::q5_k) {
          // Bits 2p and 2p + 1 of qh are the fifth bits of the two halves.
          const auto bit4 = hn::Set(du, 16);
          lo = hn::Or(lo, hn::And(hn::ShiftLeft<4>(h), bit4));
          hi = hn::Or(hi, hn::And(hn::ShiftLeft<3>(h), bit4));
          h = hn::ShiftRight<2>(h);
        }
        s0 = MulAddPairs(Scaled(lo, sc[2 * p]), x + 64 * p + j, s0, s1);
        s0 =
            MulAddPairs(Scaled(hi, sc[2 * p + 1]), x + 64 * p + 32 + j, s0, s1);
      }
    }
  } else if constexpr (kType == QuantType::q6_k) {
    int16_t sc[16];
    for (int s = 0; s < 16; ++s) sc[s] = int8_t(blk[192 + s]);
    const auto off = hn::Set(d16, 32);
    auto level = [&](VU16 v, int s) {
      return hn::Mul(hn::Sub(hn::BitCast(d16, v), off), hn::Set(d16, sc[s]));
    };
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + 64 * h;
      const uint8_t* qh = blk + 128 + 32 * h;
      const int16_t* xh = x + 128 * h;
      for (size_t j = 0; j < 32; j += n) {
        const auto a = LoadBytes(ql + j), b = LoadBytes(ql + 32 + j);
        const auto hv = LoadBytes(qh + j);
        const auto bits45 = hn::Set(du, 0x30);
        const auto q1 =
            hn::Or(hn::And(a, low4), hn::ShiftLeft<4>(hn::And(hv, low2)));
        const auto q2 =
            hn::Or(hn::And(b, low4), hn::And(hn::ShiftLeft<2>(hv), bits45));
        const auto q3 = hn::Or(hn::ShiftRight<4>(a), hn::And(hv, bits45));
        const auto q4 = hn::Or(hn::ShiftRight<4>(b),
                               hn::And(hn::ShiftRight<2>(hv), bits45));
        const int s = 8 * h + int(j / 16);
        s0 = MulAddPairs(level(q1, s), xh + j, s0, s1);
        s0 = MulAddPairs(level(q2, s + 2), xh + 32 + j, s0, s1);
        s0 = MulAddPairs(level(q3, s + 4), xh + 64 + j, s0, s1);
        s0 = MulAddPairs(level(q4, s + 6), xh + 96 + j, s0, s1);
      }
    }
  } else if constexpr (kType == QuantType::q3_k) {
    int16_t sc[16];
    for (int s = 0; s < 16; ++s)
      sc[s] = int16_t(quant::q3k_scale(blk + 96, s) - 32);
    const auto four = hn::Set(d16, 4);
    for (int h = 0; h < 2; ++h) {
      for (size_t j = 0; j < 32; j += n) {
        VU16 a = LoadBytes(blk + 32 + 32 * h + j);
        VU16 hm = hn::ShiftRightSame(LoadBytes(blk + j), 4 * h);
        for (int k = 0; k < 4; ++k) {
          // Levels 0..7 = two bits of qs plus 4 where hmask's bit is set.
          const auto v = hn::Or(hn::And(a, low2),
                                hn::ShiftLeft<2>(hn::And(hm, hn::Set(du, 1))));
          const auto q = hn::Sub(hn::BitCast(d16, v), four);
          const int s = 8 * h + 2 * k + int(j / 16);
          s0 = MulAddPairs(hn::Mul(q, hn::Set(d16, sc[s])),
                           x + 128 * h + 32 * k + j, s0, s1);
          a = hn::ShiftRight<2>(a);
          hm = hn::ShiftRight<1>(hm);
        }
      }
    }
  } else if constexpr (kType == QuantType::q2_k) {
    const uint8_t* scales = blk;
    for (int s = 0; s < 16; ++s) *mins += (scales[s] >> 4) * xs[s];
    for (int h = 0; h < 2; ++h) {
      for (size_t j = 0; j < 32; j += n) {
        VU16 a = LoadBytes(blk + 16 + 32 * h + j);
        for (int k = 0; k < 4; ++k) {
          const int s = 8 * h + 2 * k + int(j / 16);
          s0 = MulAddPairs(Scaled(hn::And(a, low2), int16_t(scales[s] & 0xF)),
                           x + 128 * h + 32 * k + j, s0, s1);
          a = hn::ShiftRight<2>(a);
        }
      }
    }
  } else {
    static_assert(kType == QuantType::q8_k);
    const auto* qs = reinterpret_cast<const int8_t*>(blk + 4);
    for (size_t j = 0; j < 256; j += n) {
      s0 = MulAddPairs(hn::PromoteTo(d16, hn::LoadU(DI8(), qs + j)), x + j, s0,
                       s1);
    }
  }
  return hn::Add(s0, s1);
}

// The f32 scale of the levels and of the mins of a super-block.
template <QuantType kType>
HWY_INLINE void SuperScales(const uint8_t* blk, float* d, float* dmin) {
  *dmin = 0.0f;
  if constexpr (kType == QuantType::q4_k || kType == QuantType::q5_k) {
    *d = HalfAt(blk);
    *dmin = HalfAt(blk + 2);
  } else if constexpr (kType == QuantType::q6_k) {
    *d = HalfAt(blk + 208);
  } else if constexpr (kType == QuantType::q3_k) {
    *d = HalfAt(blk + 108);
  } else if constexpr (kType == QuantType::q2_k) {
    *d = HalfAt(blk + 80);
    *dmin = HalfAt(blk + 82);
  } else {
    *d = F32At(blk);
  }
}

// kRows weight rows (row r at w + r * ws) . one quantized x row, into
// out[r] (kRows > 1 shares x's loads between rows).
template <QuantType kType, int kRows>
HWY_INLINE void DotSuperBlocks(const uint8_t* w, int64_t ws, const int16_t* xq,
                               const float* xd, const int32_t* xs,
                               const int16_t* xs32, int64_t nb, float* out) {
  const DF df;
  constexpr int64_t kBytes = kType == QuantType::q2_k   ? 84
                             : kType == QuantType::q3_k ? 110
                             : kType == QuantType::q4_k ? 144
                             : kType == QuantType::q5_k ? 176
                             : kType == QuantType::q6_k ? 210
                                                        : 292;
  hn::Vec<DF> acc[kRows];
  float min_sum[kRows];
  for (int r = 0; r < kRows; ++r) {
    acc[r] = hn::Zero(df);
    min_sum[r] = 0.0f;
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* blk = w + r * ws + kBytes * b;
      int32_t mins;
      const VI32 isum = SuperBlock<kType>(blk, xq + 256 * b, xs + 16 * b,
                                          xs32 + 8 * b, &mins);
      float d, dmin;
      SuperScales<kType>(blk, &d, &dmin);
      acc[r] =
          hn::MulAdd(hn::ConvertTo(df, isum), hn::Set(df, d * xd[b]), acc[r]);
      min_sum[r] += dmin * xd[b] * float(mins);
    }
  }
  for (int r = 0; r < kRows; ++r) out[r] = SumLanes(acc[r]) - min_sum[r];
}

// One weight row at a time, a single stream through W (see quant/dot_simd.cpp).
template <QuantType kType>
void DotRowsK(const uint8_t* w, int64_t ws, int64_t j0, int64_t j1,
              const QuantizedRows& x, float* y, int64_t ldy) {
  const int64_t nb = x.k / 256;
#if NASCENT_QUANT_X86
  if constexpr (kType == QuantType::q4_k || kType == QuantType::q6_k) {
    // x's level sums the kernel takes: of 32 (q4_K's mins) or of 16 (q6_K's
    // offset).
    constexpr int64_t kGroup = kType == QuantType::q4_k ? 32 : 16;
    const int16_t* sums = kType == QuantType::q4_k ? x.sums32 : x.sums16;
    DotTilesOfRows<4>(
        j0, j1, x.rows, y, ldy, [&]<int kR>(int64_t j, int64_t i, float* out) {
          const x86::XRows xr{
              x.q8 + i * x.k, x.k, x.d + i * nb, nb, sums + i * (x.k / kGroup),
              x.k / kGroup};
          if constexpr (kType == QuantType::q4_k) {
            x86::DotQ4K<kR>(w + j * ws, xr, out);
          } else {
            x86::DotQ6K<kR>(w + j * ws, xr, out);
          }
        });
    return;
  }
#endif
  DotTiles(j0, j1, x.rows, y, ldy, [&](int64_t j, int64_t i) {
    float out;
    DotSuperBlocks<kType, 1>(w + j * ws, ws, x.q + i * x.k, x.d + i * nb,
                             x.sums + i * (x.k / 16), x.sums32 + i * (x.k / 32),
                             nb, &out);
    return out;
  });
}

}  // namespace

void QDotRowsK(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  switch (type) {
    case QuantType::q2_k:
      return DotRowsK<QuantType::q2_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q3_k:
      return DotRowsK<QuantType::q3_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q4_k:
      return DotRowsK<QuantType::q4_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q5_k:
      return DotRowsK<QuantType::q5_k>(w, ws, j0, j1, x, y, ldy);
    case QuantType::q6_k:
      return DotRowsK<QuantType::q6_k>(w, ws, j0, j1, x, y, ldy);
    default:
      return DotRowsK<QuantType::q8_k>(w, ws, j0, j1, x, y, ldy);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(QDotRowsK);

void qdot_rows_k(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
                 int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  HWY_DYNAMIC_DISPATCH(QDotRowsK)(type, w, ws, j0, j1, x, y, ldy);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
