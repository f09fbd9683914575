// Winograd F(2x2, 3x3) convolution (see conv_winograd.h).
//
// Layout: for a chunk of images, V[xi][ci][tile] and M[xi][oc][tile] with
// xi < 16 the transform position and tiles numbered image by image, row by
// row, so that one GEMM per xi covers the whole chunk. The transforms run a
// row of tiles at a time in SIMD lanes (tiles of a row are 2 input columns
// apart: stride-2 loads, interleaved stores), the rest of a row in scalar.
#include "nascent/backends/cpu/conv_winograd.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "nascent/backends/cpu/balanced.h"
#include "nascent/backends/cpu/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nascent/backends/cpu/conv_winograd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "nascent/backends/cpu/image_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nascent::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// V = B^T d B for the 4x4 tile d[u][c] = p[u * ld + c], written to
// v[(u * 4 + c) * stride]. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <class T>
HWY_INLINE void input_tile(const T* p, int64_t ld, T* v, int64_t stride) {
  T e[4][4];
  for (int c = 0; c < 4; ++c) {
    const T d0 = p[c], d1 = p[ld + c], d2 = p[2 * ld + c], d3 = p[3 * ld + c];
    e[0][c] = d0 - d2, e[1][c] = d1 + d2, e[2][c] = d2 - d1, e[3][c] = d1 - d3;
  }
  for (int u = 0; u < 4; ++u) {
    v[(u * 4 + 0) * stride] = e[u][0] - e[u][2];
    v[(u * 4 + 1) * stride] = e[u][1] + e[u][2];
    v[(u * 4 + 2) * stride] = e[u][2] - e[u][1];
    v[(u * 4 + 3) * stride] = e[u][1] - e[u][3];
  }
}

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

#if HWY_TARGET != HWY_SCALAR
// dst rows [0, h) at stride ld = the plane src [h, w], without a library
// call per (short) row.
template <class T>
HWY_INLINE void copy_rows(const T* src, int64_t h, int64_t w, T* dst,
                          int64_t ld) {
  for (int64_t r = 0; r < h; ++r) {
    const T* s = src + r * w;
    T* d = dst + r * ld;
    const int64_t c = simd::for_blocks<T>(0, w, [&](auto dv, int64_t c0) {
      hn::StoreU(hn::LoadU(dv, s + c0), dv, d + c0);
    });
    for (int64_t k = c; k < w; ++k) d[k] = s[k];
  }
}
#endif

// Transforms the tiles [0, tw) of one tile row: p points at the row's first
// padded input row; tile t covers columns 2t .. 2t + 3.
template <class T>
HWY_INLINE void InputRow(const T* p, int64_t ld, int64_t tw, T* v,
                         int64_t stride) {
  int64_t t = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    auto block = [&](auto d, int64_t t0) {
      using V = decltype(hn::Zero(d));
      V e[4][4];
      for (int c = 0; c < 4; ++c) {
        const T* q = p + 2 * t0 + c;
        const V d0 = simd::load_strided(d, q, 2);
        const V d1 = simd::load_strided(d, q + ld, 2);
        const V d2 = simd::load_strided(d, q + 2 * ld, 2);
        const V d3 = simd::load_strided(d, q + 3 * ld, 2);
        e[0][c] = hn::Sub(d0, d2), e[1][c] = hn::Add(d1, d2);
        e[2][c] = hn::Sub(d2, d1), e[3][c] = hn::Sub(d1, d3);
      }
      for (int u = 0; u < 4; ++u) {
        T* out = v + t0 + u * 4 * stride;
        hn::StoreU(hn::Sub(e[u][0], e[u][2]), d, out);
        hn::StoreU(hn::Add(e[u][1], e[u][2]), d, out + stride);
        hn::StoreU(hn::Sub(e[u][2], e[u][1]), d, out + 2 * stride);
        hn::StoreU(hn::Sub(e[u][1], e[u][3]), d, out + 3 * stride);
      }
    };
    t = simd::for_blocks<T>(0, tw, block);
  }
#endif
  for (; t < tw; ++t) input_tile(p + 2 * t, ld, v + t, stride);
}

// Output rows y0 (and y1 unless null) of a tile row: columns [0, ow).
template <class T>
HWY_INLINE void OutputRow(const T* m, int64_t stride, int64_t tw, int64_t ow,
                          T bias, T* y0, T* y1) {
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
    t = simd::for_blocks<T>(0, ow / 2, block);
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
// Input: copies x [h, w] into the padded plane p (row stride ld, borders
// already zero) at (ph, pw), then its tiles to v[xi * stride + ty * tw +
// tx]. Output: m[xi * stride + ty * tw + tx] to the plane y.
template <class T>
void InputPlane(const T* x, int64_t h, int64_t w, int64_t ph, int64_t pw, T* p,
                int64_t ld, int64_t th, int64_t tw, T* v, int64_t stride) {
  T* inner = p + ph * ld + pw;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (simd::kHasLanes<T>) {
    copy_rows(x, h, w, inner, ld);
  } else {
    for (int64_t r = 0; r < h; ++r) std::copy_n(x + r * w, w, inner + r * ld);
  }
#else
  for (int64_t r = 0; r < h; ++r) std::copy_n(x + r * w, w, inner + r * ld);
#endif
  for (int64_t ty = 0; ty < th; ++ty) {
    InputRow(p + 2 * ty * ld, ld, tw, v + ty * tw, stride);
  }
}
template <class T>
void OutputPlane(const T* m, int64_t stride, int64_t th, int64_t tw, int64_t oh,
                 int64_t ow, T bias, T* y) {
  for (int64_t ty = 0; ty < th; ++ty) {
    OutputRow(m + ty * tw, stride, tw, ow, bias, y + 2 * ty * ow,
              2 * ty + 1 < oh ? y + (2 * ty + 1) * ow : nullptr);
  }
}

void InputPlaneF32(const float* x, int64_t h, int64_t w, int64_t ph, int64_t pw,
                   float* p, int64_t ld, int64_t th, int64_t tw, float* v,
                   int64_t stride) {
  InputPlane(x, h, w, ph, pw, p, ld, th, tw, v, stride);
}
void InputPlaneF64(const double* x, int64_t h, int64_t w, int64_t ph,
                   int64_t pw, double* p, int64_t ld, int64_t th, int64_t tw,
                   double* v, int64_t stride) {
  InputPlane(x, h, w, ph, pw, p, ld, th, tw, v, stride);
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
HWY_EXPORT(OutputPlaneF32);
HWY_EXPORT(OutputPlaneF64);

namespace {

void input_plane(const float* x, int64_t h, int64_t w, int64_t ph, int64_t pw,
                 float* p, int64_t ld, int64_t th, int64_t tw, float* v,
                 int64_t stride) {
  HWY_DYNAMIC_DISPATCH(InputPlaneF32)
  (x, h, w, ph, pw, p, ld, th, tw, v, stride);
}
void input_plane(const double* x, int64_t h, int64_t w, int64_t ph, int64_t pw,
                 double* p, int64_t ld, int64_t th, int64_t tw, double* v,
                 int64_t stride) {
  HWY_DYNAMIC_DISPATCH(InputPlaneF64)
  (x, h, w, ph, pw, p, ld, th, tw, v, stride);
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
  // column of the last tiles) is zero.
  const int64_t ld = 2 * tw + 2, rows = 2 * th + 2;

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
      T* plane = conv::scratch<T>(0, size_t(rows * ld));
      T* v = conv::scratch<T>(1, size_t(16 * cg * cols));
      T* mm = conv::scratch<T>(2, size_t(16 * og * cols));
      std::fill(plane, plane + rows * ld, T(0));  // Borders stay zero.
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        for (int64_t b = 0; b < nb; ++b) {
          for (int64_t ci = 0; ci < cg; ++ci) {
            const T* src = x + ((n0 + b) * g.c + grp * cg + ci) * g.h * g.w;
            input_plane(src, g.h, g.w, g.ph, g.pw, plane, ld, th, tw,
                        v + ci * cols + b * tiles, cg * cols);
          }
        }
        for (int64_t xi = 0; xi < 16; ++xi) {
          GemmArgs args;
          args.m = og, args.n = cols, args.k = cg;
          args.rsa = cg, args.csa = 1, args.rsb = cols, args.csb = 1;
          args.ldc = cols;
          gemm(args, u.data() + (grp * 16 + xi) * og * cg, v + xi * cg * cols,
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
