// Reference conversions of the k-quants (q2_K .. q6_K, q8_K). Each
// quantizer first fits every sub-block on its own (a scale, and a min where
// the type has one, by a small search for the least weighted error), then
// quantizes those per-sub-block scales to 4, 6 or 8 bits against one f16
// super-block scale, and finally requantizes the values with the scales as
// stored. Steps and float order follow ggml's reference quantizers, so the
// bits match theirs.
#include <algorithm>
#include <cmath>

#include "nascent/quant/blocks.h"
#include "nascent/quant/ref.h"

namespace nascent::quant::detail {

namespace {

// ggml's threshold below which a group counts as all zeros.
constexpr float kGroupMaxEps = 1e-15f;

int clamp(int v, int lo, int hi) {
  return std::max(lo, std::min(hi, v));
}

// Signed levels L[i] + nmax in [0, 2 nmax) and the scale minimising
// sum x^2 (x - scale l)^2 (error weighted by x^2): a first guess from the
// largest value, then 18 nearby inverse scales (ggml's make_qx_quants with
// rmse_type 1).
float fit_signed_weighted(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill_n(L, n, int8_t(0));
    return 0.0f;
  }
  auto level = [&](float iscale, float v) {
    return clamp(nearest_int(iscale * v), -nmax, nmax - 1);
  };
  float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, x[i]);
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + level(iscale, x[i]));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// q3_K's fit (ggml's make_q3_quants with rmse): levels from the largest
// value, then up to 5 rounds of moving single levels while that lowers the
// x^2-weighted error.
float fit_q3(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill_n(L, n, int8_t(0));
    return 0.0f;
  }
  const float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int round = 0; round < 5; ++round) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * float(L[i]) * float(L[i]);
        const int l = clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (l != L[i]) {
          slx += w * x[i] * float(l);
          sl2 += w * float(l) * float(l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = int8_t(l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Levels L[i] in [0, nmax] with x ~ scale * L - min_out (min_out >= 0):
// least weighted error (squared, or absolute with use_mad) over nstep + 1
// inverse scales from (nmax + rmin) to (nmax + rmin + nstep rdelta), each
// with the least-squares scale and min for its levels (ggml's
// make_qkx2_quants).
float fit_scale_min(int n, int nmax, const float* x, const float* weights,
                    uint8_t* L, float* min_out, float rmin, float rdelta,
                    int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill_n(L, n, uint8_t(0));
    *min_out = -min;
    return 0.0f;
  }
  auto error = [&](float diff) {
    return use_mad ? std::fabs(diff) : diff * diff;
  };
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    best_error += weights[i] * error(scale * float(L[i]) + min - x[i]);
  }
  uint8_t Laux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        cur_error +=
            weights[i] * error(this_scale * float(Laux[i]) + this_min - x[i]);
      }
      if (cur_error < best_error) {
        std::copy_n(Laux, n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *min_out = -min;
  return scale;
}

// Packs 2-bit levels: byte l of each 32-byte group holds the values l,
// l + 32, l + 64 and l + 96 of its 128 in bits 0-1, 2-3, 4-5, 6-7.
void pack2(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) |
                              (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// The 6-bit scales and mins of the 8 sub-blocks of q4_K and q5_K (the
// inverse of kquant_scale_min).
void pack_scale_min(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= uint8_t((ls[j] >> 4) << 6);
      scales[j] |= uint8_t((lm[j] >> 4) << 6);
    }
  }
}

// The shared first half of q4_K and q5_K: fits the 8 sub-blocks of 32
// (weights |x| + rms of the sub-block), stores the 6-bit scales and mins
// and returns the requantized levels in L.
template <class Block>
void quantize_scale_min_block(const float* x, Block& b, uint8_t* L, int nmax,
                              float rmin, float rdelta, int nstep) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_min(32, nmax, xs, weights, L + 32 * j, &mins[j], rmin,
                              rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
  }
  pack_scale_min(ls, lm, b.scales);
  b.d = float_to_half(max_scale / 63.f);
  b.dmin = float_to_half(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    kquant_scale_min(b.scales, j, &sc, &m);
    const float d = half_to_float(b.d) * float(sc);
    if (d == 0.0f) continue;
    const float dm = half_to_float(b.dmin) * float(m);
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] =
          uint8_t(clamp(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_q2_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    uint8_t L[kQK_K];
    float scales[16], mins[16], weights[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j,
                                &mins[j], -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    BlockQ2_K b;
    std::fill_n(b.scales, 16, uint8_t(0));
    b.d = b.dmin = float_to_half(0.0f);
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
      }
      b.d = float_to_half(max_scale / 15.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] |= uint8_t(nearest_int(iscale * mins[j]) << 4);
      }
      b.dmin = float_to_half(max_min / 15.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = half_to_float(b.d) * float(b.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = half_to_float(b.dmin) * float(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            uint8_t(clamp(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack2(L, b.qs);
    store_block(b, dst, i);
  }
}

void quantize_q3_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_q3(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ3_K b;
    std::fill_n(b.scales, 12, uint8_t(0));
    b.d = float_to_half(0.0f);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l =
            clamp(int8_t(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = uint8_t(l & 0xF);
        } else {
          b.scales[j - 8] |= uint8_t((l & 0xF) << 4);
        }
        b.scales[j % 4 + 8] |= uint8_t((l >> 4) << (2 * (j / 4)));
      }
      b.d = float_to_half(1 / iscale);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = half_to_float(b.d) * float(q3k_scale(b.scales, j) - 32);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            int8_t(clamp(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    // The third bit of value j goes to bit j / 32 of hmask[j % 32].
    std::fill_n(b.hmask, 32, uint8_t(0));
    uint8_t levels[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
      if (L[j] > 3) b.hmask[j % 32] |= uint8_t(1 << (j / 32));
      levels[j] = uint8_t(L[j] > 3 ? L[j] - 4 : L[j]);
    }
    pack2(levels, b.qs);
    store_block(b, dst, i);
  }
}

void quantize_q4_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    BlockQ4_K b;
    uint8_t L[kQK_K];
    quantize_scale_min_block(x, b, L, 15, -1.f, 0.1f, 20);
    // Byte l of each 32-byte group: value l of its 64 low, l + 32 high.
    for (int j = 0; j < kQK_K; j += 64) {
      for (int l = 0; l < 32; ++l) {
        b.qs[j / 2 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
      }
    }
    store_block(b, dst, i);
  }
}

void quantize_q5_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    BlockQ5_K b;
    uint8_t L[kQK_K];
    quantize_scale_min_block(x, b, L, 31, -0.5f, 0.1f, 15);
    // Low nibbles as q4_K; bit 4 of value l + 64 p (+ 32) goes to bit 2 p
    // (2 p + 1) of qh[l].
    std::fill_n(b.qh, 32, uint8_t(0));
    for (int p = 0; p < 4; ++p) {
      for (int l = 0; l < 32; ++l) {
        const int l1 = L[64 * p + l], l2 = L[64 * p + l + 32];
        b.qs[32 * p + l] = uint8_t((l1 & 0xF) | ((l2 & 0xF) << 4));
        b.qh[l] |= uint8_t(((l1 >> 4) << (2 * p)) | ((l2 >> 4) << (2 * p + 1)));
      }
    }
    store_block(b, dst, i);
  }
}

void quantize_q6_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_signed_weighted(16, 32, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ6_K b;
    std::memset(&b, 0, sizeof(b));
    if (max_abs_scale < kGroupMaxEps) {
      store_block(b, dst, i);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = float_to_half(1 / iscale);
    for (int j = 0; j < 16; ++j) {
      b.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = half_to_float(b.d) * float(b.scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            int8_t(clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
    }
    // Per 128 values: ql[l] = low nibbles of values l (low) and l + 64
    // (high), ql[l + 32] those of l + 32 and l + 96; qh[l] their top two
    // bits at 0, 2, 4, 6 for l, l + 32, l + 64, l + 96.
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      uint8_t* ql = b.ql + 64 * h;
      uint8_t* qh = b.qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = uint8_t((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        ql[l + 32] = uint8_t((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        qh[l] = uint8_t((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                        ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
      }
    }
    store_block(b, dst, i);
  }
}

void quantize_q8_k(const float* x, uint8_t* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += kQK_K) {
    float max = 0, amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    BlockQ8_K b;
    std::memset(&b, 0, sizeof(b));
    if (amax != 0.0f) {
      // -127 / max, not -128: the largest value maps to -127 or 127.
      const float iscale = -127.f / max;
      for (int j = 0; j < kQK_K; ++j) {
        b.qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
      }
      for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
        b.bsums[j] = int16_t(sum);
      }
      b.d = 1 / iscale;
    }
    store_block(b, dst, i);
  }
}

void dequantize_q2_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    // Sub-block s (16 values) = bits 2 (s / 2 % 4) of qs[32 (s / 8) +
    // 16 (s % 2) + l].
    for (int s = 0; s < 16; ++s, y += 16) {
      const float dl = d * float(b.scales[s] & 0xF);
      const float ml = dmin * float(b.scales[s] >> 4);
      const uint8_t* q = b.qs + 32 * (s / 8) + 16 * (s % 2);
      const int shift = 2 * (s / 2 % 4);
      for (int l = 0; l < 16; ++l) y[l] = dl * float((q[l] >> shift) & 3) - ml;
    }
  }
}

void dequantize_q3_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = half_to_float(b.d);
    for (int s = 0; s < 16; ++s, y += 16) {
      const float dl = d * float(q3k_scale(b.scales, s) - 32);
      const int l0 = 16 * (s % 2);
      const uint8_t* q = b.qs + 32 * (s / 8) + l0;
      const uint8_t* hm = b.hmask + l0;
      const int shift = 2 * (s / 2 % 4);
      const int bit = 1 << (s / 2);  // The third bits of values 32 k + l.
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * float(((q[l] >> shift) & 3) - ((hm[l] & bit) ? 0 : 4));
      }
    }
  }
}

void dequantize_q4_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    for (int s = 0; s < 8; ++s, y += 32) {
      uint8_t sc, m;
      kquant_scale_min(b.scales, s, &sc, &m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l)
        y[l] = d1 * float((q[l] >> shift) & 0xF) - m1;
    }
  }
}

void dequantize_q5_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    for (int s = 0; s < 8; ++s, y += 32) {
      uint8_t sc, m;
      kquant_scale_min(b.scales, s, &sc, &m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b.qh[l] >> s) & 1) << 4);
        y[l] = d1 * float(v) - m1;
      }
    }
  }
}

void dequantize_q6_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK_K) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = half_to_float(b.d);
    for (int v = 0; v < kQK_K; ++v) {
      // Value v = 128 h + 32 k + l: nibble k / 2 of ql[64 h + 32 (k % 2) + l],
      // bits 2 k of qh[32 h + l]; scale 8 h + 2 k + l / 16.
      const int h = v / 128, k = v % 128 / 32, l = v % 32;
      const int low = (b.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
      const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      y[v] = d * float(b.scales[8 * h + 2 * k + l / 16]) * float(q);
    }
  }
}

void dequantize_q8_k(const uint8_t* src, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kQK_K) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * float(b.qs[j]);
  }
}

}  // namespace nascent::quant::detail
