// nascent's reference codecs (quant/codec.h) and half conversions
// (core/dtype.h) against ggml's own results (quant/ggml_vectors.h says how
// they were made): every block type quantizes the pattern to ggml's bytes
// and decodes them to ggml's values, random blocks decode to ggml's values,
// and f32 -> f16/bf16 rounds as ggml does, bit for bit. A drift in a
// k-quant search (one step fewer in q4_K's scale search, say) fails here
// without the llama.cpp peer installed.
#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "nascent/core/dtype.h"
#include "nascent/quant/codec.h"
#include "quant/ggml_vectors.h"

namespace nascent::quant {
namespace {

using namespace test::ggml;

TEST(QuantGgml, PatternIsTheGeneratorsInput) {
  const std::vector<float> x = pattern();
  EXPECT_EQ(fnv1a(x.data(), x.size() * 4), kPatternHash);
}

TEST(QuantGgml, EveryTypeIsCovered) {
  // Every QuantType but f32 (a copy) has pattern bytes; every block type
  // random blocks too.
  for (int t = 0; t < kNumQuantTypes; ++t) {
    const QuantType type = QuantType(t);
    if (type == QuantType::f32) continue;
    int quantized = 0, decoded = 0;
    for (const QuantizeVector& v : kQuantizeVectors) {
      quantized += type_of(v.type) == type;
    }
    for (const DequantizeVector& v : kDequantizeVectors) {
      decoded += type_of(v.type) == type;
    }
    EXPECT_EQ(quantized, 1) << name(type);
    EXPECT_EQ(decoded, block_size(type) > 1 ? 1 : 0) << name(type);
  }
}

// Where two byte strings first differ, as "block B byte I".
std::string first_difference(const std::vector<uint8_t>& got,
                             const std::vector<uint8_t>& want,
                             int64_t block_bytes) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      return "block " + std::to_string(int64_t(i) / block_bytes) + " byte " +
             std::to_string(int64_t(i) % block_bytes);
    }
  }
  return got.size() == want.size() ? "none" : "length";
}

TEST(QuantGgml, QuantizeGivesGgmlsBytes) {
  const std::vector<float> x = pattern();
  for (const QuantizeVector& v : kQuantizeVectors) {
    const QuantType type = type_of(v.type);
    const size_t row = row_bytes(type, kPatternCols);
    std::vector<uint8_t> got(row * kPatternRows);
    for (int r = 0; r < kPatternRows; ++r) {
      quantize_row(type, x.data() + r * kPatternCols, got.data() + r * row,
                   kPatternCols);
    }
    if (v.bytes == nullptr) {
      EXPECT_EQ(fnv1a(got.data(), got.size()), v.bytes_hash) << v.type;
    } else {
      const std::vector<uint8_t> want = from_hex(v.bytes);
      EXPECT_TRUE(got == want)
          << v.type << ": first difference at "
          << first_difference(got, want, block_bytes(type));
    }
    // ggml's decode of its bytes, through nascent's decoder.
    std::vector<float> y(x.size());
    dequantize_row(type, got.data(), y.data(), int64_t(x.size()));
    EXPECT_EQ(fnv1a(y.data(), y.size() * 4), v.values_hash) << v.type;
  }
}

TEST(QuantGgml, BulkQuantizeGivesGgmlsBytes) {
  const std::vector<float> x = bulk();
  ASSERT_EQ(fnv1a(x.data(), x.size() * 4), kBulkHash);
  int types = 0;
  for (const BulkVector& v : kBulkVectors) {
    const QuantType type = type_of(v.type);
    const size_t row = row_bytes(type, kBulkCols);
    std::vector<uint8_t> got(row * kBulkRows);
    for (int r = 0; r < kBulkRows; ++r) {
      quantize_row(type, x.data() + r * kBulkCols, got.data() + r * row,
                   kBulkCols);
    }
    EXPECT_EQ(fnv1a(got.data(), got.size()), v.bytes_hash) << v.type;
    std::vector<float> y(x.size());
    dequantize_row(type, got.data(), y.data(), int64_t(y.size()));
    EXPECT_EQ(fnv1a(y.data(), y.size() * 4), v.values_hash) << v.type;
    ++types;
  }
  EXPECT_EQ(types, kNumQuantTypes - 1);  // All but f32.
}

TEST(QuantGgml, QuantizeOfFewerBlocksIsAPrefix) {
  // Blocks are independent: one block, or three, give ggml's first bytes.
  const std::vector<float> x = pattern();
  for (const QuantizeVector& v : kQuantizeVectors) {
    if (v.bytes == nullptr) continue;
    const QuantType type = type_of(v.type);
    const std::vector<uint8_t> want = from_hex(v.bytes);
    for (int64_t blocks : {1, 3}) {
      const int64_t n = blocks * block_size(type);
      std::vector<uint8_t> got(row_bytes(type, n));
      quantize_row(type, x.data(), got.data(), n);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
          << v.type << " " << blocks << " blocks";
    }
  }
}

TEST(QuantGgml, DequantizeGivesGgmlsValues) {
  for (const DequantizeVector& v : kDequantizeVectors) {
    const QuantType type = type_of(v.type);
    const std::vector<uint8_t> bytes = from_hex(v.bytes);
    ASSERT_EQ(bytes.size(), row_bytes(type, v.values)) << v.type;
    const std::vector<float> want = floats_from_hex(v.floats);
    ASSERT_EQ(int64_t(want.size()), v.values) << v.type;
    std::vector<float> got(want.size());
    dequantize_row(type, bytes.data(), got.data(), v.values);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(test::ggml::float_bits(got[i]), test::ggml::float_bits(want[i]))
          << v.type << " value " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

TEST(QuantGgml, HalfConversionsRoundAsGgml) {
  for (const HalfVector& v : kHalfVectors) {
    const float f = test::ggml::bits_float(v.f32);
    EXPECT_EQ(to_float16(f).bits, v.f16) << std::hex << "f32 0x" << v.f32;
    EXPECT_EQ(to_bfloat16(f).bits, v.bf16) << std::hex << "f32 0x" << v.f32;
    // The codecs of the f16 and bf16 "blocks" too.
    uint16_t h = 0, b = 0;
    quantize_row(QuantType::f16, &f, &h, 1);
    quantize_row(QuantType::bf16, &f, &b, 1);
    EXPECT_EQ(h, v.f16) << std::hex << "f32 0x" << v.f32;
    EXPECT_EQ(b, v.bf16) << std::hex << "f32 0x" << v.f32;
  }
}

// The value of every f16 and bf16 bit pattern from its fields, in float64.
double half_value(uint16_t bits, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
  const int m = bits & ((1 << mant_bits) - 1);
  const double sign = bits >> 15 ? -1.0 : 1.0;
  if (e == (1 << exp_bits) - 1) {
    return m ? std::nan("") : sign * INFINITY;
  }
  if (e == 0) return sign * std::ldexp(m, 1 - bias - mant_bits);
  return sign * std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
}

TEST(QuantGgml, HalfToFloatIsExactForEveryBitPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t u = uint16_t(bits);
    const double h = half_value(u, 5, 10), b = half_value(u, 8, 7);
    const float fh = to_float(float16{u}), fb = to_float(bfloat16{u});
    if (std::isnan(h)) {
      ASSERT_TRUE(std::isnan(fh)) << std::hex << "f16 0x" << bits;
    } else {
      ASSERT_EQ(double(fh), h) << std::hex << "f16 0x" << bits;
      ASSERT_EQ(std::signbit(fh), std::signbit(h)) << std::hex << bits;
    }
    if (std::isnan(b)) {
      ASSERT_TRUE(std::isnan(fb)) << std::hex << "bf16 0x" << bits;
    } else {
      ASSERT_EQ(double(fb), b) << std::hex << "bf16 0x" << bits;
    }
    // And back: every value of the type converts to its own bits (NaNs
    // come back quiet, their sign kept).
    if (std::isnan(h)) {
      EXPECT_EQ(to_float16(fh).bits & 0xfe00u, (u & 0x8000u) | 0x7e00u);
    } else {
      ASSERT_EQ(to_float16(fh).bits, u) << std::hex << "f16 0x" << bits;
    }
    if (!std::isnan(b)) {
      ASSERT_EQ(to_bfloat16(fb).bits, u) << std::hex << "bf16 0x" << bits;
    }
  }
}

}  // namespace
}  // namespace nascent::quant
