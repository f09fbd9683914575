// The pieces of GGML rows the GPU's fast paths read: 16 bytes of levels
// and the scales they need, loaded by one thread, then either multiplied
// with x (the mat-vec kernels, qmatvec.cu) or decoded to values (the f16
// panels of prompts, quant.cu). Rows<T> for f32, f16, bf16, q8_0, q4_0,
// q4_K and q6_K; reads() says which rows they may read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "nascent/backends/cuda/quant_blocks.cuh"
#include "nascent/core/quant.h"
#include "nascent/quant/blocks.h"

namespace nascent::cuda::pieces {

// 2^23 + v for a byte v in the low byte of a float's bits: v as a float
// after subtracting 2^23 (or 2^23 + an offset, in one step).
constexpr float kMagic = 8388608.0f;
NASCENT_D float byte_float(uint32_t word, int i, float bias) {
  return __int_as_float(int(__byte_perm(word, 0x4B000000u, 0x7440u + i))) -
         bias;
}

NASCENT_D uint32_t load_u32_even(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return uint32_t(__ldg(h)) | (uint32_t(__ldg(h + 1)) << 16);
}
NASCENT_D float load_f16(const uint8_t* p) {
  return __half2float(
      __ushort_as_half(__ldg(reinterpret_cast<const uint16_t*>(p))));
}
NASCENT_D float4 load_x4(const float* p) {
  return __ldg(reinterpret_cast<const float4*>(p));
}

// sum over i of the four byte levels of `word` (minus `bias`) times x[i].
NASCENT_D float dot4(uint32_t word, float bias, float4 x) {
  float s = byte_float(word, 0, bias) * x.x;
  s = fmaf(byte_float(word, 1, bias), x.y, s);
  s = fmaf(byte_float(word, 2, bias), x.z, s);
  return fmaf(byte_float(word, 3, bias), x.w, s);
}
NASCENT_D float sum4(float4 x) {
  return (x.x + x.y) + (x.z + x.w);
}

// The pieces of a row, per type: kValues values each, of which a lane
// loads the weight bits (load, 16 bytes of levels and the scales they
// need) and the kX4 float4s of x they meet (x_col: the column of the i-th),
// then takes their dot product. A warp loads the pieces of two rows before
// it reads x, so each x value it reads serves both.
template <QuantType T>
struct Rows;

template <>
struct Rows<QuantType::f32> {
  static constexpr int kValues = 4, kX4 = 1, kAlign = 16;
  struct Piece {
    float4 w;
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    return {__ldg(reinterpret_cast<const float4*>(row) + g)};
  }
  NASCENT_D static int64_t x_col(int64_t g, int) { return 4 * g; }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    return fmaf(p.w.x, x[0].x,
                fmaf(p.w.y, x[0].y, fmaf(p.w.z, x[0].z, p.w.w * x[0].w)));
  }
};

// f16 and bf16: eight values (16 bytes) a piece.
template <QuantType T>
struct HalfRows {
  static constexpr int kValues = 8, kX4 = 2, kAlign = 16;
  struct Piece {
    uint4 w;
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    return {__ldg(reinterpret_cast<const uint4*>(row) + g)};
  }
  NASCENT_D static int64_t x_col(int64_t g, int i) { return 8 * g + 4 * i; }
  NASCENT_D static float2 pair(uint32_t bits) {
    if constexpr (T == QuantType::f16) {
      return __half22float2(*reinterpret_cast<const __half2*>(&bits));
    } else {
      return make_float2(__uint_as_float(bits << 16),
                         __uint_as_float(bits & 0xFFFF0000u));
    }
  }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    const float2 w0 = pair(p.w.x), w1 = pair(p.w.y), w2 = pair(p.w.z),
                 w3 = pair(p.w.w);
    float s = w0.x * x[0].x;
    s = fmaf(w0.y, x[0].y, s);
    s = fmaf(w1.x, x[0].z, s);
    s = fmaf(w1.y, x[0].w, s);
    s = fmaf(w2.x, x[1].x, s);
    s = fmaf(w2.y, x[1].y, s);
    s = fmaf(w3.x, x[1].z, s);
    return fmaf(w3.y, x[1].w, s);
  }
};
template <>
struct Rows<QuantType::f16> : HalfRows<QuantType::f16> {};
template <>
struct Rows<QuantType::bf16> : HalfRows<QuantType::bf16> {};

// 16 bytes at an even address, as four words.
NASCENT_D uint4 load16_even(const uint8_t* p) {
  return make_uint4(load_u32_even(p), load_u32_even(p + 4),
                    load_u32_even(p + 8), load_u32_even(p + 12));
}

// q8_0: half a block (16 levels) a piece.
template <>
struct Rows<QuantType::q8_0> {
  static constexpr int kValues = 16, kX4 = 4, kAlign = 2;
  struct Piece {
    uint4 q;
    float d;
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    const uint8_t* b = row + (g / 2) * int64_t(sizeof(quant::BlockQ8_0));
    return {load16_even(b + offsetof(quant::BlockQ8_0, qs) + 16 * (g % 2)),
            load_f16(b)};
  }
  NASCENT_D static int64_t x_col(int64_t g, int i) { return 16 * g + 4 * i; }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    // Signed levels as unsigned ones, +128.
    const float bias = kMagic + 128.0f;
    const float s = (dot4(p.q.x ^ 0x80808080u, bias, x[0]) +
                     dot4(p.q.y ^ 0x80808080u, bias, x[1])) +
                    (dot4(p.q.z ^ 0x80808080u, bias, x[2]) +
                     dot4(p.q.w ^ 0x80808080u, bias, x[3]));
    return p.d * s;
  }
  // The piece's decoded values, in x_col order (4 i + e at x_col(g, i) + e).
  NASCENT_D static void values(const Piece& p, float (&v)[4 * kX4]) {
    const uint32_t q[4] = {p.q.x, p.q.y, p.q.z, p.q.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const auto level = int8_t((q[i / 4] >> (8 * (i % 4))) & 0xFF);
      v[i] = blocks::mul(float(level), p.d);
    }
  }
};

// q4_0: a block a piece: nibbles of qs, values 0..15 low, 16..31 high.
template <>
struct Rows<QuantType::q4_0> {
  static constexpr int kValues = 32, kX4 = 8, kAlign = 2;
  struct Piece {
    uint4 q;
    float d;
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    const uint8_t* b = row + g * int64_t(sizeof(quant::BlockQ4_0));
    return {load16_even(b + offsetof(quant::BlockQ4_0, qs)), load_f16(b)};
  }
  NASCENT_D static int64_t x_col(int64_t g, int i) { return 32 * g + 4 * i; }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    const float bias = kMagic + 8.0f;
    const uint32_t q[4] = {p.q.x, p.q.y, p.q.z, p.q.w};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      s += dot4(q[i] & 0x0F0F0F0Fu, bias, x[i]) +
           dot4((q[i] >> 4) & 0x0F0F0F0Fu, bias, x[4 + i]);
    }
    return p.d * s;
  }
  NASCENT_D static void values(const Piece& p, float (&v)[4 * kX4]) {
    const uint32_t q[4] = {p.q.x, p.q.y, p.q.z, p.q.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t byte = (q[i / 4] >> (8 * (i % 4))) & 0xFF;
      v[i] = blocks::mul(float(int(byte & 0xF) - 8), p.d);
      v[16 + i] = blocks::mul(float(int(byte >> 4) - 8), p.d);
    }
  }
};

// q4_K: 8 pieces a block; piece p is qs bytes 16p.., the values l..l + 15
// (l = 16 (p % 2)) of sub-blocks 2j (low nibbles) and 2j + 1 (high), j =
// p / 2.
template <>
struct Rows<QuantType::q4_k> {
  static constexpr int kValues = 32, kX4 = 8, kAlign = 16;
  using Block = quant::BlockQ4_K;
  struct Piece {
    uint4 q;
    float d0, d1, n0, n1;  // The two sub-blocks' scales and mins.
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    const uint8_t* b = row + (g / 8) * int64_t(sizeof(Block));
    const int p = int(g % 8), j = p / 2;
    Piece out;
    out.q = __ldg(reinterpret_cast<const uint4*>(b + offsetof(Block, qs)) + p);
    const uint32_t dm = __ldg(reinterpret_cast<const uint32_t*>(b));
    const float2 dd = __half22float2(*reinterpret_cast<const __half2*>(&dm));
    int sc0, m0, sc1, m1;
    const uint8_t* scales = b + offsetof(Block, scales);
    blocks::scale_min_k4(scales, 2 * j, &sc0, &m0);
    blocks::scale_min_k4(scales, 2 * j + 1, &sc1, &m1);
    out.d0 = dd.x * float(sc0);
    out.d1 = dd.x * float(sc1);
    out.n0 = dd.y * float(m0);
    out.n1 = dd.y * float(m1);
    return out;
  }
  NASCENT_D static int64_t x_col(int64_t g, int i) {
    const int p = int(g % 8);
    return (g / 8) * quant::kQK_K + 64 * (p / 2) + 16 * (p % 2) +
           (i < 4 ? 4 * i : 32 + 4 * (i - 4));
  }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    const uint32_t q[4] = {p.q.x, p.q.y, p.q.z, p.q.w};
    float lo = 0.0f, hi = 0.0f, xlo = 0.0f, xhi = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo += dot4(q[i] & 0x0F0F0F0Fu, kMagic, x[i]);
      hi += dot4((q[i] >> 4) & 0x0F0F0F0Fu, kMagic, x[4 + i]);
      xlo += sum4(x[i]);
      xhi += sum4(x[4 + i]);
    }
    return fmaf(p.d0, lo, fmaf(p.d1, hi, -fmaf(p.n0, xlo, p.n1 * xhi)));
  }
  NASCENT_D static void values(const Piece& p, float (&v)[4 * kX4]) {
    const uint32_t q[4] = {p.q.x, p.q.y, p.q.z, p.q.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t byte = (q[i / 4] >> (8 * (i % 4))) & 0xFF;
      v[i] = blocks::mul_sub(p.d0, float(byte & 0xF), p.n0);
      v[16 + i] = blocks::mul_sub(p.d1, float(byte >> 4), p.n1);
    }
  }
};

// q6_K: 4 pieces a block; piece p takes l = 16 (p % 2) .. l + 15 of half
// h = p / 2 for each of the four 32-value runs k: value 128 h + 32 k + l.
template <>
struct Rows<QuantType::q6_k> {
  static constexpr int kValues = 64, kX4 = 16, kAlign = 2;
  using Block = quant::BlockQ6_K;
  struct Piece {
    uint4 a, c, qh;
    float sc[4];
  };
  NASCENT_D static Piece load(const uint8_t* row, int64_t g) {
    const uint8_t* b = row + (g / 4) * int64_t(sizeof(Block));
    const int p = int(g % 4), h = p / 2, l = 16 * (p % 2);
    Piece out;
    out.a = load16_even(b + offsetof(Block, ql) + 64 * h + l);
    out.c = load16_even(b + offsetof(Block, ql) + 64 * h + 32 + l);
    out.qh = load16_even(b + offsetof(Block, qh) + 32 * h + l);
    const float d = load_f16(b + offsetof(Block, d));
    const auto* scales =
        reinterpret_cast<const int8_t*>(b + offsetof(Block, scales));
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      out.sc[r] = d * float(scales[8 * h + 2 * r + l / 16]);
    }
    return out;
  }
  NASCENT_D static int64_t x_col(int64_t g, int i) {
    const int p = int(g % 4);
    return (g / 4) * quant::kQK_K + 128 * (p / 2) + 16 * (p % 2) +
           32 * (i / 4) + 4 * (i % 4);
  }
  NASCENT_D static float dot(const Piece& p, const float4 (&x)[kX4]) {
    const uint32_t a[4] = {p.a.x, p.a.y, p.a.z, p.a.w};
    const uint32_t c[4] = {p.c.x, p.c.y, p.c.z, p.c.w};
    const uint32_t qh[4] = {p.qh.x, p.qh.y, p.qh.z, p.qh.w};
    const float bias = kMagic + 32.0f;
    float run[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      // The levels of run k for values 4i..4i + 3: low | high << 4.
      run[0] +=
          dot4((a[i] & 0x0F0F0F0Fu) | ((qh[i] << 4) & 0x30303030u), bias, x[i]);
      run[1] += dot4((c[i] & 0x0F0F0F0Fu) | ((qh[i] << 2) & 0x30303030u), bias,
                     x[4 + i]);
      run[2] += dot4(((a[i] >> 4) & 0x0F0F0F0Fu) | (qh[i] & 0x30303030u), bias,
                     x[8 + i]);
      run[3] += dot4(((c[i] >> 4) & 0x0F0F0F0Fu) | ((qh[i] >> 2) & 0x30303030u),
                     bias, x[12 + i]);
    }
    return fmaf(p.sc[0], run[0],
                fmaf(p.sc[1], run[1], fmaf(p.sc[2], run[2], p.sc[3] * run[3])));
  }
  NASCENT_D static void values(const Piece& p, float (&v)[4 * kX4]) {
    const uint32_t a[4] = {p.a.x, p.a.y, p.a.z, p.a.w};
    const uint32_t c[4] = {p.c.x, p.c.y, p.c.z, p.c.w};
    const uint32_t qh[4] = {p.qh.x, p.qh.y, p.qh.z, p.qh.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int w = i / 4, sh = 8 * (i % 4);
      const uint32_t al = (a[w] >> sh) & 0xFF, cl = (c[w] >> sh) & 0xFF,
                     h = (qh[w] >> sh) & 0xFF;
      const int q[4] = {int((al & 0xF) | ((h & 3) << 4)),
                        int((cl & 0xF) | (((h >> 2) & 3) << 4)),
                        int((al >> 4) | (((h >> 4) & 3) << 4)),
                        int((cl >> 4) | (((h >> 6) & 3) << 4))};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        v[16 * r + i] = blocks::mul(p.sc[r], float(q[r] - 32));
      }
    }
  }
};

// Whether Rows<T> holds GGML blocks (and has values()), not floats.
template <QuantType T>
inline constexpr bool kBlocks =
    T != QuantType::f32&& T != QuantType::f16&& T != QuantType::bf16;

// Calls fn(std::integral_constant<QuantType, T>{}) for the types with a
// Rows<T> and returns true; false for the others.
template <class Fn>
bool with_rows(QuantType type, Fn&& fn) {
  switch (type) {
    case QuantType::f32:
      return fn(std::integral_constant<QuantType, QuantType::f32>{}), true;
    case QuantType::f16:
      return fn(std::integral_constant<QuantType, QuantType::f16>{}), true;
    case QuantType::bf16:
      return fn(std::integral_constant<QuantType, QuantType::bf16>{}), true;
    case QuantType::q8_0:
      return fn(std::integral_constant<QuantType, QuantType::q8_0>{}), true;
    case QuantType::q4_0:
      return fn(std::integral_constant<QuantType, QuantType::q4_0>{}), true;
    case QuantType::q4_k:
      return fn(std::integral_constant<QuantType, QuantType::q4_k>{}), true;
    case QuantType::q6_k:
      return fn(std::integral_constant<QuantType, QuantType::q6_k>{}), true;
    default:
      return false;
  }
}

// Whether Rows<type> may read rows of k values starting at w, ws bytes
// apart: the type has pieces, k is whole pieces, and every row start is
// aligned for the pieces' loads.
inline bool reads(QuantType type, const void* w, int64_t ws, int64_t k) {
  bool ok = false;
  with_rows(type, [&](auto t) {
    using R = Rows<decltype(t)::value>;
    ok = k % R::kValues == 0 && ws % R::kAlign == 0 &&
         reinterpret_cast<uintptr_t>(w) % R::kAlign == 0;
  });
  return ok;
}

}  // namespace nascent::cuda::pieces
