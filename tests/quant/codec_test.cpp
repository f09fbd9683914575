// QuantType's table and the reference block conversions: blocks built here
// from the documented layouts (quant/blocks.h) must decode to the values
// their fields say, and quantize-then-dequantize must stay within each
// type's error bound.
#include "nascent/core/quant.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/core/dtype.h"
#include "nascent/core/error.h"
#include "nascent/quant/blocks.h"
#include "nascent/quant/codec.h"

namespace nascent::quant {
namespace {

constexpr QuantType kAllTypes[] = {
    QuantType::f32,  QuantType::f16,  QuantType::bf16, QuantType::q4_0,
    QuantType::q4_1, QuantType::q5_0, QuantType::q5_1, QuantType::q8_0,
    QuantType::q2_k, QuantType::q3_k, QuantType::q4_k, QuantType::q5_k,
    QuantType::q6_k, QuantType::q8_k};

TEST(QuantType, TableMatchesGgml) {
  struct Want {
    QuantType type;
    const char* name;
    uint32_t id;
    int64_t block, bytes;
  };
  const Want want[] = {
      {QuantType::f32, "f32", 0, 1, 4},
      {QuantType::f16, "f16", 1, 1, 2},
      {QuantType::bf16, "bf16", 30, 1, 2},
      {QuantType::q4_0, "q4_0", 2, 32, sizeof(BlockQ4_0)},
      {QuantType::q4_1, "q4_1", 3, 32, sizeof(BlockQ4_1)},
      {QuantType::q5_0, "q5_0", 6, 32, sizeof(BlockQ5_0)},
      {QuantType::q5_1, "q5_1", 7, 32, sizeof(BlockQ5_1)},
      {QuantType::q8_0, "q8_0", 8, 32, sizeof(BlockQ8_0)},
      {QuantType::q2_k, "q2_K", 10, 256, sizeof(BlockQ2_K)},
      {QuantType::q3_k, "q3_K", 11, 256, sizeof(BlockQ3_K)},
      {QuantType::q4_k, "q4_K", 12, 256, sizeof(BlockQ4_K)},
      {QuantType::q5_k, "q5_K", 13, 256, sizeof(BlockQ5_K)},
      {QuantType::q6_k, "q6_K", 14, 256, sizeof(BlockQ6_K)},
      {QuantType::q8_k, "q8_K", 15, 256, sizeof(BlockQ8_K)},
  };
  ASSERT_EQ(std::size(want), size_t(kNumQuantTypes));
  for (const Want& w : want) {
    const QuantTypeInfo& i = info(w.type);
    EXPECT_EQ(i.type, w.type);
    EXPECT_STREQ(name(w.type), w.name);
    EXPECT_EQ(i.ggml_type, w.id) << w.name;
    EXPECT_EQ(block_size(w.type), w.block) << w.name;
    EXPECT_EQ(block_bytes(w.type), w.bytes) << w.name;
    EXPECT_EQ(quant_type_from_ggml(w.id), w.type) << w.name;
    EXPECT_EQ(quant_type_from_name(w.name), w.type) << w.name;
  }
  EXPECT_EQ(quant_type_from_name("Q4_K"), QuantType::q4_k);
  EXPECT_EQ(quant_type_from_name("BF16"), QuantType::bf16);
  EXPECT_EQ(quant_type_from_name("q4_k_m"), std::nullopt);
  EXPECT_EQ(quant_type_from_name(""), std::nullopt);
  // Removed (4, 5), i-quants (16..23, 29), integer tensors (24..28).
  for (uint32_t id : {4u, 5u, 9u, 16u, 20u, 23u, 24u, 27u, 28u, 29u, 31u, 1000u,
                      0xffffffffu}) {
    EXPECT_EQ(quant_type_from_ggml(id), std::nullopt) << id;
  }
}

TEST(QuantType, RowBytes) {
  EXPECT_EQ(row_bytes(QuantType::f32, 7), 28u);
  EXPECT_EQ(row_bytes(QuantType::bf16, 0), 0u);
  EXPECT_EQ(row_bytes(QuantType::q4_0, 4096), 4096u / 32 * 18);
  EXPECT_EQ(row_bytes(QuantType::q4_k, 5632), 5632u / 256 * 144);
  EXPECT_EQ(row_bytes(QuantType::q6_k, 256), 210u);
  try {
    row_bytes(QuantType::q4_k, 100);
    ADD_FAILURE() << "row_bytes(q4_K, 100) did not throw";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    for (const char* part : {"row_bytes", "q4_K", "256", "100"}) {
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(row_bytes(QuantType::q8_0, -32), ShapeError);
  EXPECT_THROW(row_bytes(QuantType::f32, int64_t(1) << 62), ValueError);
  std::vector<float> x(40);
  std::vector<uint8_t> blocks(64);
  EXPECT_THROW(quantize_row(QuantType::q8_0, x.data(), blocks.data(), 40),
               ShapeError);
  EXPECT_THROW(dequantize_row(QuantType::q4_0, blocks.data(), x.data(), 33),
               ShapeError);
}

// --- Blocks built by hand -------------------------------------------------

uint16_t half(float f) {
  return to_float16(f).bits;
}

template <class Block>
std::vector<uint8_t> bytes_of(const Block& b) {
  std::vector<uint8_t> out(sizeof(Block));
  std::memcpy(out.data(), &b, sizeof(Block));
  return out;
}

void expect_decodes(QuantType type, const std::vector<uint8_t>& block,
                    const std::vector<float>& want) {
  // At an odd address: rows of a mapped file need not be aligned.
  std::vector<uint8_t> shifted(block.size() + 1);
  std::memcpy(shifted.data() + 1, block.data(), block.size());
  std::vector<float> got(want.size());
  dequantize_row(type, shifted.data() + 1, got.data(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << name(type) << " value " << i;
  }
}

// Levels and scales are random; scales are powers of two and levels small
// integers, so every expected value is exact in float.
class HandBuiltBlocks : public ::testing::Test {
 protected:
  int level(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::mt19937 rng_{1234};
};

TEST_F(HandBuiltBlocks, Q4_0AndQ4_1) {
  BlockQ4_0 a{};
  BlockQ4_1 b{};
  a.d = b.d = half(0.5f);
  b.m = half(-3.0f);
  std::vector<float> want_a(32), want_b(32);
  for (int i = 0; i < 32; ++i) {
    const int q = level(0, 15);
    // Value i < 16 is the low nibble of byte i, value i + 16 the high one.
    a.qs[i % 16] |= uint8_t(q << (4 * (i / 16)));
    b.qs[i % 16] |= uint8_t(q << (4 * (i / 16)));
    want_a[i] = 0.5f * float(q - 8);
    want_b[i] = 0.5f * float(q) - 3.0f;
  }
  expect_decodes(QuantType::q4_0, bytes_of(a), want_a);
  expect_decodes(QuantType::q4_1, bytes_of(b), want_b);
}

TEST_F(HandBuiltBlocks, Q5_0AndQ5_1) {
  BlockQ5_0 a{};
  BlockQ5_1 b{};
  a.d = b.d = half(0.25f);
  b.m = half(1.0f);
  uint32_t qh = 0;
  std::vector<float> want_a(32), want_b(32);
  for (int i = 0; i < 32; ++i) {
    const int q = level(0, 31);
    a.qs[i % 16] |= uint8_t((q & 0xF) << (4 * (i / 16)));
    qh |= uint32_t(q >> 4) << i;  // Bit 4 of value i is bit i of qh.
    want_a[i] = 0.25f * float(q - 16);
    want_b[i] = 0.25f * float(q) + 1.0f;
  }
  std::memcpy(a.qh, &qh, 4);
  std::memcpy(b.qs, a.qs, 16);
  std::memcpy(b.qh, a.qh, 4);
  expect_decodes(QuantType::q5_0, bytes_of(a), want_a);
  expect_decodes(QuantType::q5_1, bytes_of(b), want_b);
}

TEST_F(HandBuiltBlocks, Q8_0AndQ8_K) {
  BlockQ8_0 a{};
  BlockQ8_K b{};
  a.d = half(0.125f);
  b.d = 0.0625f;
  std::vector<float> want_a(32), want_b(256);
  for (int i = 0; i < 32; ++i) {
    a.qs[i] = int8_t(level(-128, 127));
    want_a[i] = 0.125f * float(a.qs[i]);
  }
  for (int i = 0; i < 256; ++i) {
    b.qs[i] = int8_t(level(-128, 127));
    want_b[i] = 0.0625f * float(b.qs[i]);
  }
  expect_decodes(QuantType::q8_0, bytes_of(a), want_a);
  expect_decodes(QuantType::q8_k, bytes_of(b), want_b);
}

TEST_F(HandBuiltBlocks, Q2_K) {
  BlockQ2_K b{};
  b.d = half(0.5f);
  b.dmin = half(0.25f);
  std::vector<float> want(256);
  for (int s = 0; s < 16; ++s) {
    const int sc = level(0, 15), m = level(0, 15);
    b.scales[s] = uint8_t(sc | (m << 4));
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * s + l, q = level(0, 3);
      // Value v = 128 h + 32 k + r sits in bits 2k of qs[32 h + r].
      b.qs[32 * (v / 128) + v % 32] |= uint8_t(q << (2 * (v % 128 / 32)));
      want[v] = 0.5f * float(sc * q) - 0.25f * float(m);
    }
  }
  expect_decodes(QuantType::q2_k, bytes_of(b), want);
}

TEST_F(HandBuiltBlocks, Q3_K) {
  BlockQ3_K b{};
  b.d = half(0.5f);
  std::vector<float> want(256);
  for (int s = 0; s < 16; ++s) {
    const int sc = level(0, 63);  // Stored 6-bit; the scale is sc - 32.
    b.scales[s % 8] |= uint8_t((sc & 0xF) << (4 * (s / 8)));
    b.scales[8 + s % 4] |= uint8_t((sc >> 4) << (2 * (s / 4)));
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * s + l, q = level(-4, 3);
      const int u = q + 4;  // Low two bits in qs as q2_K; bit 2 in hmask.
      b.qs[32 * (v / 128) + v % 32] |= uint8_t((u & 3) << (2 * (v % 128 / 32)));
      b.hmask[v % 32] |= uint8_t((u >> 2) << (v / 32));
      want[v] = 0.5f * float((sc - 32) * q);
    }
  }
  expect_decodes(QuantType::q3_k, bytes_of(b), want);
}

// q4_K and q5_K share the 12-byte packing of eight 6-bit scales and mins.
void pack_scales(const int* sc, const int* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = uint8_t((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

TEST_F(HandBuiltBlocks, Q4_KAndQ5_K) {
  BlockQ4_K a{};
  BlockQ5_K b{};
  a.d = b.d = half(0.25f);
  a.dmin = b.dmin = half(0.5f);
  int sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = level(0, 63);
    m[s] = level(0, 63);
  }
  pack_scales(sc, m, a.scales);
  std::memcpy(b.scales, a.scales, 12);
  std::vector<float> want_a(256), want_b(256);
  for (int v = 0; v < 256; ++v) {
    const int s = v / 32, q = level(0, 31);
    // Value v = 64 p + 32 half + r: nibble `half` of qs[32 p + r]; q5_K's
    // fifth bit is bit s of qh[r].
    const int byte = 32 * (v / 64) + v % 32, shift = 4 * (v % 64 / 32);
    a.qs[byte] |= uint8_t((q & 0xF) << shift);
    b.qs[byte] |= uint8_t((q & 0xF) << shift);
    b.qh[v % 32] |= uint8_t((q >> 4) << s);
    want_a[v] = 0.25f * float(sc[s] * (q & 0xF)) - 0.5f * float(m[s]);
    want_b[v] = 0.25f * float(sc[s] * q) - 0.5f * float(m[s]);
  }
  expect_decodes(QuantType::q4_k, bytes_of(a), want_a);
  expect_decodes(QuantType::q5_k, bytes_of(b), want_b);
}

TEST_F(HandBuiltBlocks, Q6_K) {
  BlockQ6_K b{};
  b.d = half(0.125f);
  for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(level(-128, 127));
  std::vector<float> want(256);
  for (int v = 0; v < 256; ++v) {
    const int q = level(0, 63);
    // Value v = 128 h + 32 k + r: low nibble in nibble k / 2 of
    // ql[64 h + 32 (k % 2) + r], top two bits at bit 2k of qh[32 h + r].
    const int h = v / 128, k = v % 128 / 32, r = v % 32;
    b.ql[64 * h + 32 * (k % 2) + r] |= uint8_t((q & 0xF) << (4 * (k / 2)));
    b.qh[32 * h + r] |= uint8_t((q >> 4) << (2 * k));
    want[v] = 0.125f * float(b.scales[v / 16] * (q - 32));
  }
  expect_decodes(QuantType::q6_k, bytes_of(b), want);
}

// --- Round trips ------------------------------------------------------------

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  // A few outliers, and a block of one sign, as real weights have.
  for (int64_t i = 0; i < n; i += 97) x[size_t(i)] *= 6.0f;
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) {
    x[size_t(i)] = std::fabs(x[size_t(i)]) + 0.5f;
  }
  return x;
}

std::vector<float> round_trip(QuantType type, const std::vector<float>& x) {
  const int64_t n = int64_t(x.size());
  std::vector<uint8_t> blocks(row_bytes(type, n));
  quantize_row(type, x.data(), blocks.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, blocks.data(), y.data(), n);
  return y;
}

// Per-value bound of the 32-value types and the plain floats: half a step
// of the block's scale (a whole step where the top level clamps), plus the
// f16 rounding of the stored scale and min.
TEST(QuantRoundTrip, BlockTypesStayWithinHalfAStep) {
  const std::vector<float> x = random_row(32 * 40, 7);
  constexpr float u16 = 0x1p-11f;
  for (QuantType type :
       {QuantType::f32, QuantType::f16, QuantType::bf16, QuantType::q4_0,
        QuantType::q4_1, QuantType::q5_0, QuantType::q5_1, QuantType::q8_0}) {
    const std::vector<float> y = round_trip(type, x);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0, lo = x[32 * b], hi = x[32 * b];
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
      }
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
        float bound = 0;
        switch (type) {
          case QuantType::f16:
            bound = std::fabs(x[i]) * u16;
            break;
          case QuantType::bf16:
            bound = std::fabs(x[i]) * 0x1p-8f;
            break;
          case QuantType::q4_0:
            bound = amax / 8 * (1 + 8 * u16);
            break;
          case QuantType::q5_0:
            bound = amax / 16 * (1 + 16 * u16);
            break;
          case QuantType::q4_1:
            bound = (hi - lo) / 15 * (0.5f + 15 * u16) + std::fabs(lo) * u16;
            break;
          case QuantType::q5_1:
            bound = (hi - lo) / 31 * (0.5f + 31 * u16) + std::fabs(lo) * u16;
            break;
          case QuantType::q8_0:
            bound = amax / 127 * (0.5f + 127 * u16);
            break;
          default:
            break;
        }
        ASSERT_LE(std::fabs(y[i] - x[i]), bound * 1.001f + 1e-7f)
            << name(type) << " value " << i << ": " << x[i] << " -> " << y[i];
      }
    }
  }
}

// The k-quants fit scales per sub-block, so their bound is statistical: on
// normal data the RMS error is below that of a uniform quantizer of as many
// bits spanning +-3 sigma (6 / (2^bits sqrt(12))), which they beat by
// adapting to each sub-block. q8_K, with one scale per 256 values, has a
// plain per-value bound instead (half a step of max |x| / 127).
TEST(QuantRoundTrip, KQuantsBeatAUniformQuantizerOfTheirBits) {
  const std::vector<float> x = random_row(256 * 24, 11);
  double sumsq = 0;
  for (float v : x) sumsq += double(v) * v;
  const double rms_x = std::sqrt(sumsq / double(x.size()));
  const std::pair<QuantType, int> types[] = {{QuantType::q2_k, 2},
                                             {QuantType::q3_k, 3},
                                             {QuantType::q4_k, 4},
                                             {QuantType::q5_k, 5},
                                             {QuantType::q6_k, 6}};
  for (auto [type, bits] : types) {
    const std::vector<float> y = round_trip(type, x);
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += double(y[i] - x[i]) * double(y[i] - x[i]);
    }
    const double rms = std::sqrt(err / double(x.size())) / rms_x;
    EXPECT_LT(rms, 6.0 / (std::ldexp(1.0, bits) * std::sqrt(12.0)))
        << name(type);
  }
  const std::vector<float> y = round_trip(QuantType::q8_k, x);
  for (size_t b = 0; b < x.size() / 256; ++b) {
    float amax = 0;
    for (size_t i = 256 * b; i < 256 * b + 256; ++i) {
      amax = std::max(amax, std::fabs(x[i]));
    }
    for (size_t i = 256 * b; i < 256 * b + 256; ++i) {
      ASSERT_LE(std::fabs(y[i] - x[i]), amax / 127 * 0.5001f) << i;
    }
  }
}

TEST(QuantRoundTrip, ZerosAndConstantsComeBack) {
  for (QuantType type : kAllTypes) {
    const int64_t n = 2 * block_size(type) + (block_size(type) == 1 ? 3 : 0);
    const std::vector<float> zeros(size_t(n), 0.0f);
    EXPECT_EQ(round_trip(type, zeros), zeros) << name(type);
    // A constant row: every type holds 0.5 within 1/16 (k-quants fit the
    // constant through scale and min or a signed scale).
    const std::vector<float> halves(size_t(n), 0.5f);
    for (float v : round_trip(type, halves)) {
      ASSERT_NEAR(v, 0.5f, 0.5f / 16) << name(type);
    }
  }
}

}  // namespace
}  // namespace nascent::quant
