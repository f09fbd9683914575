// Known answers from ggml, llama.cpp's tensor library, for nascent's GGML
// codecs (data/ggml_quant_vectors.inc): the bytes ggml's reference
// quantizers give for a fixed input, the values its decoders give for fixed
// blocks, and its f32 -> f16/bf16 conversions of edge values.
//
// How they were made, once (the generator is not in the repository):
// llama-cpp-python 0.3.36's source distribution from PyPI (`pip download
// llama-cpp-python==0.3.36 --no-deps --no-binary :all:`), its vendored
// vendor/llama.cpp/ggml/src/ggml-quants.c compiled with gcc 12.2 (Debian
// 12, x86-64, `-O2 -ffp-contract=off`, no -march) and a small C driver
// that filled the pattern below, called quantize_row_{type}_ref row by row
// (the quantizers llama-quantize uses without an importance matrix) and
// dequantize_row_{type}, GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16 of
// ggml-impl.h for the half types, and printed the results. The random
// blocks came from a PCG32 stream, their f16 scales set to |d| < 0.1 (q8_K:
// an f32 d, |d| < 0.01) so that the values stay finite. As a check, the
// sdist's own gguf-py (vendor/llama.cpp/gguf-py, numpy 2.4) decoded every
// random block it knows (all types but q8_K) to the same bits and quantized
// the pattern to the same bytes for the types it can (f16, bf16, q4_0,
// q4_1, q5_0, q5_1, q8_0).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "nascent/core/quant.h"

namespace nascent::test::ggml {

// std::bit_cast for floats and their bits (emscripten's libc++ lacks it).
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct QuantizeVector {
  const char* type;      // ggml's name ("q4_K").
  const char* bytes;     // Hex of the pattern's blocks; nullptr for f16/bf16,
  uint64_t bytes_hash;   // whose bytes are known by their FNV-1a instead.
  uint64_t values_hash;  // FNV-1a of the f32 values ggml decodes from them.
};

struct BulkVector {
  const char* type;
  uint64_t bytes_hash;   // FNV-1a of the bulk rows' blocks,
  uint64_t values_hash;  // and of the f32 values ggml decodes from them.
};

struct DequantizeVector {
  const char* type;
  int64_t values;      // Three blocks.
  const char* bytes;   // Hex.
  const char* floats;  // Hex of the f32 values, little-endian.
};

struct HalfVector {
  uint32_t f32;
  uint16_t f16;
  uint16_t bf16;
};

#include "quant/data/ggml_quant_vectors.inc"

// The input: kPatternRows rows of kPatternCols values, each value exact in
// f32 on every platform (integer hashes scaled by powers of two):
//   row 0: a bell-shaped spread in (-2, 2);
//   row 1: the same with outliers (x8) and one-signed stretches;
//   row 2: uniform in [0, 1) (no negative value);
//   row 3: 16-value groups of zeros, a constant, tiny (2^-20) and large
//          (2^10) values, then a 32-block with one value, then zeros
//          every third value;
//   row 4: small negative values but one positive.
inline constexpr int kPatternRows = 5;
inline constexpr int kPatternCols = 512;

inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// A sum of four 16-bit uniforms, centred: bell-shaped in (-2, 2).
inline float bell(uint32_t i) {
  const uint32_t a = mix32(2 * i), b = mix32(2 * i + 1);
  const int32_t s =
      int32_t((a & 0xffffu) + (a >> 16) + (b & 0xffffu) + (b >> 16)) -
      2 * 65536;
  return float(s) * (1.0f / 65536.0f);
}

inline float pattern_value(int r, int c) {
  const uint32_t i = uint32_t(r * kPatternCols + c);
  const float x = bell(i);
  switch (r) {
    case 0:
      return x;
    case 1:
      if (c % 37 == 5) return x * 8.0f;
      if ((c >= 40 && c < 48) || (c >= 300 && c < 331)) {
        return (x < 0 ? -x : x) + 0.25f;
      }
      return x;
    case 2:
      return float(mix32(i ^ 0x5bd1e995u) >> 8) * (1.0f / 16777216.0f);
    case 3:
      if (c < 256) {
        switch ((c / 16) % 4) {
          case 0:
            return 0.0f;
          case 1:
            return (c / 64) % 2 ? -0.75f : 0.75f;
          case 2:
            return x * (1.0f / 1048576.0f);
          default:
            return x * 1024.0f;
        }
      }
      if (c >= 384 && c < 416) return c == 400 ? -1.5f : 0.0f;
      return c % 3 == 0 ? 0.0f : x;
    default:
      return c == 77 ? 0.125f : -(x < 0 ? -x : x) * (1.0f / 64.0f);
  }
}

// The bulk input: kBulkRows rows of kBulkCols bell-shaped values (scaled
// by 1/4 ... 4, every seventh row one-signed): enough blocks (1024 of 256)
// that the rare branches of the k-quant searches run (one q4_K scale-search
// step fewer changes about 1 block in 100).
inline constexpr int kBulkRows = 1024;
inline constexpr int kBulkCols = 256;

inline std::vector<float> bulk() {
  constexpr float kScale[5] = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
  std::vector<float> out;
  out.reserve(size_t(kBulkRows) * kBulkCols);
  for (int r = 0; r < kBulkRows; ++r) {
    for (int c = 0; c < kBulkCols; ++c) {
      const uint32_t i = uint32_t(r * kBulkCols + c) + 0x10000000u;
      const float x = bell(i) * kScale[r % 5];
      out.push_back(r % 7 == 3 && x < 0 ? -x : x);
    }
  }
  return out;
}

inline std::vector<float> pattern() {
  std::vector<float> out;
  for (int r = 0; r < kPatternRows; ++r) {
    for (int c = 0; c < kPatternCols; ++c) out.push_back(pattern_value(r, c));
  }
  return out;
}

inline uint64_t fnv1a(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

inline std::vector<uint8_t> from_hex(const char* hex) {
  const size_t n = std::strlen(hex);
  std::vector<uint8_t> out(n / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = uint8_t(std::stoul(std::string(hex + 2 * i, 2), nullptr, 16));
  }
  return out;
}

inline std::vector<float> floats_from_hex(const char* hex) {
  const std::vector<uint8_t> bytes = from_hex(hex);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

inline QuantType type_of(const char* name) {
  const std::optional<QuantType> t = quant_type_from_name(name);
  if (!t) throw std::runtime_error(std::string("unknown type ") + name);
  return *t;
}

}  // namespace nascent::test::ggml
