// Winograd F(2x2, 3x3) convolution (see conv/winograd.h).
//
// Layout: for a chunk of images, V[xi][ci][tile] and M[xi][oc][tile] with
// xi < 16 the transform position and tiles numbered image by image, row by
// row, so that one GEMM per xi covers the whole chunk. The transforms run a
// row of tiles at a time in SIMD lanes. Tiles of a row are 2 input columns
// apart: the input transform reads the padded plane split into its even and
// odd columns (plain loads), the output transform stores interleaved.
#include "nascent/backends/cpu/conv/winograd.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nascent/backends/cpu/balanced.h"
#include "nascent/backends/cpu/gemm/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/conv/winograd_simd.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "nascent/backends/cpu/simd/image-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Y = A^T m A + bias for m[u][c] = m[(u * 4 + c) * stride], written to
// y[u][c] (u, c < 2). A^T = [1 1 1 0; 0 1 -1 -1].
template <class T>
HWY_INLINE void output_tile(const T* m, int64_t stride, T bias, T y[2][2]) {
  T s[2][4];
  for (int c = 0; c < 4; ++c) {
    const T m0 = m[c * stride], m1 = m[(4 + c) * stride];
    const T m2 = m[(8 + c) * stride], m3 = m[(12 + c) * stride];
    s[0][c] = m0 + m1 + m2, s[1][c] = m1 - m2 - m3;
  }
  for (int u = 0; u < 2; ++u) {
    y[u][0] = s[u][0] + s[u][1] + s[u][2] + bias;
    y[u][1] = s[u][1] - s[u][2] - s[u][3] + bias;
  }
}

// The padded plane is held as two half planes, its even and its odd
// columns (row stride ld each): the 4x4 tile t of a tile row reads columns
// 2t .. 2t + 3, that is even[t], odd[t], even[t + 1] and odd[t + 1], so a
// vector of consecutive tiles is four plain loads per row, no shuffles.

// Copies x [h, w] into the half planes at (ph, pw) of the padded plane:
// x's even columns go to the half of pw's parity.
template <class T>
HWY_INLINE void SplitColumns(const T* x, int64_t h, int64_t w, int64_t ph,
                             int64_t pw, T* even, T* odd, int64_t ld) {
  T* to_even = (pw % 2 == 0 ? even : odd) + ph * ld + pw / 2;
  T* to_odd = (pw % 2 == 0 ? odd : even) + ph * ld + (pw + 1) / 2;
  for (int64_t r = 0; r < h; ++r) {
    const T* s = x + r * w;
    T* de = to_even + r * ld;
    T* dd = to_odd + r * ld;
    int64_t k = 0;
#if HWY_TARGET != HWY_SCALAR
    if constexpr (simd::kHasLanes<T>) {
      k = simd::for_blocks<T>(0, w / 2, [&](auto d, int64_t k0) {
        hn::Vec<decltype(d)> ev, od;
        hn::LoadInterleaved2(d, s + 2 * k0, ev, od);
        hn::StoreU(ev, d, de + k0);
        hn::StoreU(od, d, dd + k0);
      });
    }
#endif
    for (; k < w / 2; ++k) de[k] = s[2 * k], dd[k] = s[2 * k + 1];
    if (w % 2 != 0) de[w / 2] = s[w - 1];
  }
}

// Lanes of the vectors InputRow uses (1 without SIMD): its last block of
// a row writes up to lanes - 1 tiles past the row.
template <class T>
int64_t InputLanes() {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    return int64_t(hn::Lanes(hn::ScalableTag<T>()));
  }
#endif
  return 1;
}

// V = B^T d B for the tiles [0, tw) of one tile row (e and o: the row's
// first padded row in the half planes), tile t to v[(u * 4 + c) * stride +
// t]. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. Whole vectors of tiles:
// the last one runs past tw, into tiles the caller writes later or into
// the padding it leaves after each row of V (InputLanes() - 1 entries).
template <class T>
HWY_INLINE void InputRow(const T* e, const T* o, int64_t ld, int64_t tw, T* v,
                         int64_t stride) {
  int64_t t = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    const hn::ScalableTag<T> d;
    using V = hn::Vec<decltype(d)>;
    for (; t < tw; t += int64_t(hn::Lanes(d))) {
      // Column c of padded row r of the tiles t..: the half plane of c's
      // parity, c / 2 further on.
      auto at = [&](int c, int r) {
        return hn::LoadU(d, (c % 2 == 0 ? e : o) + r * ld + t + c / 2);
      };
      for (int u = 0; u < 4; ++u) {
        V m[4];
        for (int c = 0; c < 4; ++c) {
          switch (u) {
            case 0:
              m[c] = hn::Sub(at(c, 0), at(c, 2));
              break;
            case 1:
              m[c] = hn::Add(at(c, 1), at(c, 2));
              break;
            case 2:
              m[c] = hn::Sub(at(c, 2), at(c, 1));
              break;
            default:
              m[c] = hn::Sub(at(c, 1), at(c, 3));
              break;
          }
        }
        T* out = v + t + u * 4 * stride;
        hn::StoreU(hn::Sub(m[0], m[2]), d, out);
        hn::StoreU(hn::Add(m[1], m[2]), d, out + stride);
        hn::StoreU(hn::Sub(m[2], m[1]), d, out + 2 * stride);
        hn::StoreU(hn::Sub(m[1], m[3]), d, out + 3 * stride);
      }
    }
  }
#endif
  for (; t < tw; ++t) {
    auto at = [&](int c, int r) {
      return (c % 2 == 0 ? e : o)[r * ld + t + c / 2];
    };
    for (int u = 0; u < 4; ++u) {
      T m[4];
      for (int c = 0; c < 4; ++c) {
        switch (u) {
          case 0:
            m[c] = at(c, 0) - at(c, 2);
            break;
          case 1:
            m[c] = at(c, 1) + at(c, 2);
            break;
          case 2:
            m[c] = at(c, 2) - at(c, 1);
            break;
          default:
            m[c] = at(c, 1) - at(c, 3);
            break;
        }
      }
      T* out = v + t + u * 4 * stride;
      out[0] = m[0] - m[2], out[stride] = m[1] + m[2];
      out[2 * stride] = m[2] - m[1], out[3 * stride] = m[1] - m[3];
    }
  }
}

// Output rows y0 (and y1 unless null) of a tile row: columns [0, ow), or
// with `spill` in whole vectors of tiles past them (see OutputPlane).
template <class T>
HWY_INLINE void OutputRow(const T* m, int64_t stride, int64_t tw, int64_t ow,
                          T bias, T* y0, T* y1, bool spill) {
  int64_t t = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    // Whole blocks only where both columns of every tile exist.
    auto block = [&](auto d, int64_t t0) {
      using V = decltype(hn::Zero(d));
      V s[2][4];
      for (int c = 0; c < 4; ++c) {
        const V m0 = hn::LoadU(d, m + t0 + c * stride);
        const V m1 = hn::LoadU(d, m + t0 + (4 + c) * stride);
        const V m2 = hn::LoadU(d, m + t0 + (8 + c) * stride);
        const V m3 = hn::LoadU(d, m + t0 + (12 + c) * stride);
        s[0][c] = hn::Add(hn::Add(m0, m1), m2);
        s[1][c] = hn::Sub(hn::Sub(m1, m2), m3);
      }
      const V b = hn::Set(d, bias);
      for (int u = 0; u < 2; ++u) {
        T* y = u == 0 ? y0 : y1;
        if (y == nullptr) continue;
        const V left = hn::Add(hn::Add(hn::Add(s[u][0], s[u][1]), s[u][2]), b);
        const V right = hn::Add(hn::Sub(hn::Sub(s[u][1], s[u][2]), s[u][3]), b);
        hn::StoreInterleaved2(left, right, d, y + 2 * t0);
      }
    };
    if (spill) {
      // Last block first: its spill past y0 into y1 is then overwritten.
      const hn::ScalableTag<T> d;
      const int64_t lanes = int64_t(hn::Lanes(d));
      for (int64_t t0 = (tw - 1) / lanes * lanes; t0 >= 0; t0 -= lanes) {
        block(d, t0);
      }
      t = tw;
    } else {
      t = simd::for_blocks<T>(0, ow / 2, block);
    }
  }
#endif
  for (; t < tw; ++t) {
    T y[2][2];
    output_tile(m + t, stride, bias, y);
    for (int64_t c = 2 * t; c < std::min(2 * t + 2, ow); ++c) {
      y0[c] = y[0][c - 2 * t];
      if (y1 != nullptr) y1[c] = y[1][c - 2 * t];
    }
  }
}

// Whole planes per call: one dispatch per plane, not per tile row.
// Input: copies x [h, w] to (ph, pw) of the padded plane, held in p as its
// even half plane, then its odd one ((2 th + 2) x ld each, borders already
// zero), then its tiles to v[xi * stride + ty * tw + tx]. Output: m[xi *
// stride + ty * tw + tx] to the plane y.
template <class T>
void InputPlane(const T* x, const T* next, int64_t h, int64_t w, int64_t ph,
                int64_t pw, T* p, int64_t ld, int64_t th, int64_t tw, T* v,
                int64_t stride) {
  // The next plane (null for none) comes from memory while this one is
  // transformed.
  if (next != nullptr) {
    for (int64_t i = 0; i < h * w; i += 64 / int64_t(sizeof(T))) {
      hwy::Prefetch(next + i);
    }
  }
  T* odd = p + (2 * th + 2) * ld;
  SplitColumns(x, h, w, ph, pw, p, odd, ld);
  for (int64_t ty = 0; ty < th; ++ty) {
    InputRow(p + 2 * ty * ld, odd + 2 * ty * ld, ld, tw, v + ty * tw, stride);
  }
}
template <class T>
void OutputPlane(const T* m, int64_t stride, int64_t th, int64_t tw, int64_t oh,
                 int64_t ow, T bias, T* y) {
  // Tile rows but the last may run whole vectors of tiles past their end
  // while that stays within the next tile row: they read the next row's
  // products and spill into output rows written later (y1 after y0, the
  // next tile row after this one).
  int64_t spill_tiles = tw;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    const int64_t lanes = int64_t(hn::Lanes(hn::ScalableTag<T>()));
    spill_tiles = (tw + lanes - 1) / lanes * lanes;
  }
#endif
  for (int64_t ty = 0; ty < th; ++ty) {
    OutputRow(m + ty * tw, stride, tw, ow, bias, y + 2 * ty * ow,
              2 * ty + 1 < oh ? y + (2 * ty + 1) * ow : nullptr,
              ty + 1 < th && spill_tiles <= ow);
  }
}

void InputPlaneF32(const float* x, const float* next, int64_t h, int64_t w,
                   int64_t ph, int64_t pw, float* p, int64_t ld, int64_t th,
                   int64_t tw, float* v, int64_t stride) {
  InputPlane(x, next, h, w, ph, pw, p, ld, th, tw, v, stride);
}
void InputPlaneF64(const double* x, const double* next, int64_t h, int64_t w,
                   int64_t ph, int64_t pw, double* p, int64_t ld, int64_t th,
                   int64_t tw, double* v, int64_t stride) {
  InputPlane(x, next, h, w, ph, pw, p, ld, th, tw, v, stride);
}
int64_t InputLanesF32() {
  return InputLanes<float>();
}
int64_t InputLanesF64() {
  return InputLanes<double>();
}
void OutputPlaneF32(const float* m, int64_t stride, int64_t th, int64_t tw,
                    int64_t oh, int64_t ow, float bias, float* y) {
  OutputPlane(m, stride, th, tw, oh, ow, bias, y);
}
void OutputPlaneF64(const double* m, int64_t stride, int64_t th, int64_t tw,
                    int64_t oh, int64_t ow, double bias, double* y) {
  OutputPlane(m, stride, th, tw, oh, ow, bias, y);
}

}  // namespace HWY_NAMESPACE
}  // namespace nascent::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nascent::cpu {

HWY_EXPORT(InputPlaneF32);
HWY_EXPORT(InputPlaneF64);
HWY_EXPORT(InputLanesF32);
HWY_EXPORT(InputLanesF64);
HWY_EXPORT(OutputPlaneF32);
HWY_EXPORT(OutputPlaneF64);

namespace {

void input_plane(const float* x, const float* next, int64_t h, int64_t w,
                 int64_t ph, int64_t pw, float* p, int64_t ld, int64_t th,
                 int64_t tw, float* v, int64_t stride) {
  HWY_DYNAMIC_DISPATCH(InputPlaneF32)
  (x, next, h, w, ph, pw, p, ld, th, tw, v, stride);
}
void input_plane(const double* x, const double* next, int64_t h, int64_t w,
                 int64_t ph, int64_t pw, double* p, int64_t ld, int64_t th,
                 int64_t tw, double* v, int64_t stride) {
  HWY_DYNAMIC_DISPATCH(InputPlaneF64)
  (x, next, h, w, ph, pw, p, ld, th, tw, v, stride);
}
template <class T>
int64_t input_lanes() {
  if constexpr (std::is_same_v<T, float>) {
    return HWY_DYNAMIC_DISPATCH(InputLanesF32)();
  } else {
    return HWY_DYNAMIC_DISPATCH(InputLanesF64)();
  }
}
void output_plane(const float* m, int64_t stride, int64_t th, int64_t tw,
                  int64_t oh, int64_t ow, float bias, float* y) {
  HWY_DYNAMIC_DISPATCH(OutputPlaneF32)(m, stride, th, tw, oh, ow, bias, y);
}
void output_plane(const double* m, int64_t stride, int64_t th, int64_t tw,
                  int64_t oh, int64_t ow, double bias, double* y) {
  HWY_DYNAMIC_DISPATCH(OutputPlaneF64)(m, stride, th, tw, oh, ow, bias, y);
}

void gemm(const GemmArgs& g, const float* a, const float* b, float* c) {
  gemm_f32(g, a, b, c);
}
void gemm(const GemmArgs& g, const double* a, const double* b, double* c) {
  gemm_f64(g, a, b, c);
}

// Tiles per GEMM: enough columns for the GEMM to run at speed, few enough
// that V and M stay within the caches.
constexpr int64_t kTilesPerChunk = 256;

template <class T>
void run(const conv::Geometry& g, const T* x, const T* w, const T* bias,
         T* out) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t th = (g.oh + 1) / 2, tw = (g.ow + 1) / 2, tiles = th * tw;
  // The padded plane: tile (ty, tx) covers rows 2ty .. 2ty + 3 and columns
  // 2tx .. 2tx + 3; what lies past the input (padding, and the odd row or
  // column of the last tiles) is zero. Each half plane (even, odd columns)
  // has tw + 1 columns and room for InputRow's last vector.
  const int64_t lanes = input_lanes<T>();
  const int64_t ld = (tw + lanes - 1) / lanes * lanes + 1, rows = 2 * th + 2;

  // U[grp][xi][m][ci] = (G f G^T)[xi] for the filter f of output m and
  // input ci of the group, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
  std::vector<T> u(size_t(g.groups * 16 * og * cg));
  for (int64_t oc = 0; oc < g.o; ++oc) {
    const int64_t grp = oc / og, m = oc % og;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const T* f = w + (oc * cg + ci) * 9;  // The 3x3 filter.
      T gg[4][3];                           // G g
      for (int c = 0; c < 3; ++c) {
        const T a = f[c], b = f[3 + c], d = f[6 + c];
        gg[0][c] = a, gg[1][c] = (a + b + d) / 2, gg[2][c] = (a - b + d) / 2;
        gg[3][c] = d;
      }
      T* dst = u.data() + ((grp * 16) * og + m) * cg + ci;
      for (int r = 0; r < 4; ++r) {
        const T a = gg[r][0], b = gg[r][1], d = gg[r][2];
        const T row[4] = {a, (a + b + d) / 2, (a - b + d) / 2, d};
        for (int c = 0; c < 4; ++c) dst[(r * 4 + c) * og * cg] = row[c];
      }
    }
  }

  const int64_t per_chunk =
      std::clamp<int64_t>(kTilesPerChunk / std::max<int64_t>(tiles, 1), 1, g.n);
  // Ranges of whole images per task (no shared output), in chunks.
  auto images = [&](int64_t begin, int64_t end) {
    for (int64_t n0 = begin; n0 < end; n0 += per_chunk) {
      const int64_t nb = std::min(per_chunk, end - n0), cols = nb * tiles;
      // V's rows (one per input channel) leave room for InputRow's last
      // vector past the last image.
      const int64_t vld = cols + lanes - 1;
      T* plane = conv::scratch<T>(0, size_t(2 * rows * ld));
      T* v = conv::scratch<T>(1, size_t(16 * cg * vld));
      T* mm = conv::scratch<T>(2, size_t(16 * og * cols));
      std::fill(plane, plane + 2 * rows * ld, T(0));  // Borders stay zero.
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // Images in order: a plane's last vector of tiles lands in the
        // next image's place, written after it.
        for (int64_t b = 0; b < nb; ++b) {
          for (int64_t ci = 0; ci < cg; ++ci) {
            const T* src = x + ((n0 + b) * g.c + grp * cg + ci) * g.h * g.w;
            const bool last = ci + 1 == cg && (b + 1 == nb || g.groups > 1);
            input_plane(src, last ? nullptr : src + g.h * g.w, g.h, g.w, g.ph,
                        g.pw, plane, ld, th, tw, v + ci * vld + b * tiles,
                        cg * vld);
          }
        }
        for (int64_t xi = 0; xi < 16; ++xi) {
          GemmArgs args;
          args.m = og, args.n = cols, args.k = cg;
          args.rsa = cg, args.csa = 1, args.rsb = vld, args.csb = 1;
          args.ldc = cols;
          gemm(args, u.data() + (grp * 16 + xi) * og * cg, v + xi * cg * vld,
               mm + xi * og * cols);
        }
        for (int64_t b = 0; b < nb; ++b) {
          for (int64_t m = 0; m < og; ++m) {
            const int64_t oc = grp * og + m;
            T* y = out + ((n0 + b) * g.o + oc) * g.oh * g.ow;
            output_plane(mm + m * cols + b * tiles, og * cols, th, tw, g.oh,
                         g.ow, bias != nullptr ? bias[oc] : T(0), y);
          }
        }
      }
    }
  };
  balanced_for(g.n, 1, images);
}

}  // namespace

void winograd_conv3x3(const conv::Geometry& g, const float* x, const float* w,
                      const float* bias, float* out) {
  run(g, x, w, bias, out);
}
void winograd_conv3x3(const conv::Geometry& g, const double* x, const double* w,
                      const double* bias, double* out) {
  run(g, x, w, bias, out);
}

}  // namespace nascent::cpu
#endif  // HWY_ONCE
