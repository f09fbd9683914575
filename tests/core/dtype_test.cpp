// DType properties, the promotion table, and the float16/bfloat16
// conversions against an independent reference (nearest representable
// value found by search, ties to even).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/core/dtype.h"

namespace nascent {
namespace {

constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                          DType::i32, DType::i64, DType::u8,  DType::boolean};

TEST(DType, Properties) {
  const size_t sizes[] = {4, 8, 2, 2, 4, 8, 1, 1};
  const char* names[] = {"f32", "f64", "f16", "bf16",
                         "i32", "i64", "u8",  "bool"};
  for (size_t i = 0; i < std::size(kAll); ++i) {
    EXPECT_EQ(size_of(kAll[i]), sizes[i]);
    EXPECT_STREQ(name(kAll[i]), names[i]);
    EXPECT_EQ(is_floating(kAll[i]), i < 4) << names[i];
    EXPECT_EQ(is_integer(kAll[i]), i >= 4 && i < 7) << names[i];
    EXPECT_EQ(to_floating(kAll[i]), i < 4 ? kAll[i] : DType::f32) << names[i];
  }
}

TEST(DType, PromotionTable) {
  // Row a, column b, in the order of kAll. bool < u8 < i32 < i64 < f16 and
  // bf16 < f32 < f64; f16 with bf16 meet in f32.
  using D = DType;
  const D f32 = D::f32, f64 = D::f64, f16 = D::f16, bf = D::bf16, i32 = D::i32,
          i64 = D::i64, u8 = D::u8, b = D::boolean;
  const D table[8][8] = {
      /* f32  */ {f32, f64, f32, f32, f32, f32, f32, f32},
      /* f64  */ {f64, f64, f64, f64, f64, f64, f64, f64},
      /* f16  */ {f32, f64, f16, f32, f16, f16, f16, f16},
      /* bf16 */ {f32, f64, f32, bf, bf, bf, bf, bf},
      /* i32  */ {f32, f64, f16, bf, i32, i64, i32, i32},
      /* i64  */ {f32, f64, f16, bf, i64, i64, i64, i64},
      /* u8   */ {f32, f64, f16, bf, i32, i64, u8, u8},
      /* bool */ {f32, f64, f16, bf, i32, i64, u8, b},
  };
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 8; ++j) {
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), table[i][j])
          << name(kAll[i]) << " with " << name(kAll[j]) << " gave "
          << name(promote_types(kAll[i], kAll[j]));
    }
  }
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The value of a half from its fields, without the code under test.
double decode_half(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0x1f) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(double(mant), -24);
  return sign * std::ldexp(double(1024 + mant), exp - 25);
}

// Nearest of the two neighbours lo < x < hi (by magnitude), ties to the one
// with an even last bit.
uint16_t nearest(double x, double lo, uint16_t lo_bits, double hi,
                 uint16_t hi_bits) {
  double dl = x - lo, dh = hi - x;
  if (dl < dh) return lo_bits;
  if (dh < dl) return hi_bits;
  return (lo_bits & 1) == 0 ? lo_bits : hi_bits;
}

// Reference float -> half: binary search over the finite positive halves.
uint16_t ref_half(float f) {
  static const std::vector<double> positive = [] {
    std::vector<double> v;
    for (uint16_t h = 0; h <= 0x7bff; ++h) v.push_back(decode_half(h));
    return v;
  }();
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0x7e00;  // Sign and payload are not compared.
  double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;  // Max 65504 + half an ulp.
  auto it = std::lower_bound(positive.begin(), positive.end(), a);
  uint16_t hi = uint16_t(it - positive.begin());
  // Past 65504 the next value up is 65536 (0x7c00, inf).
  double hi_value = hi <= 0x7bff ? positive[hi] : 65536.0;
  if (hi_value == a) return sign | hi;
  return sign | nearest(a, positive[hi - 1u], uint16_t(hi - 1), hi_value, hi);
}

// Reference float -> bfloat16: the two neighbours are the truncation and
// the next bfloat16 up in magnitude.
uint16_t ref_bf16(float f) {
  uint32_t u = bits_of(f);
  if (std::isnan(f)) return 0x7fc0;
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t mag = u & 0x7fffffffu;
  uint16_t lo_bits = uint16_t(mag >> 16);
  double a = std::fabs(double(f));
  double lo = double(from_bits(uint32_t(lo_bits) << 16));
  if (lo == a) return sign | lo_bits;
  // The value after the largest finite bf16 is 2^128 (rounds to inf).
  double hi = lo_bits == 0x7f7f
                  ? std::ldexp(1.0, 128)
                  : double(from_bits(uint32_t(lo_bits + 1) << 16));
  return sign | nearest(a, lo, lo_bits, hi, uint16_t(lo_bits + 1));
}

// Inputs that exercise rounding: every half, the midpoints between
// neighbours and one f32 ulp either side, f32 subnormals, the overflow
// edge, and a spread of f32 bit patterns.
std::vector<float> rounding_inputs() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    double x = decode_half(uint16_t(h)), y = decode_half(uint16_t(h + 1));
    float mid = float((x + y) / 2);  // Exact: a half has 11 bits.
    for (float m : {float(x), mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, INFINITY)}) {
      v.push_back(m);
      v.push_back(-m);
    }
  }
  for (float f : {65504.0f, 65519.0f, 65519.996f, 65520.0f, 65536.0f, 1e30f,
                  3.4028235e38f, 1e-45f, 1e-40f, 1.1754942e-38f, 5.9604645e-8f,
                  2.9802322e-8f, 2.9802326e-8f}) {
    v.push_back(f);
    v.push_back(-f);
  }
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) {
    v.push_back(from_bits(uint32_t(u)));
  }
  return v;
}

TEST(Float16, EveryBitPatternDecodesAndRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float16 h{uint16_t(b)};
    float f = to_float(h);
    double want = decode_half(h.bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      ASSERT_TRUE(std::isnan(to_float(to_float16(f)))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(double(f), want) << std::hex << b;
    ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << b;
    ASSERT_EQ(to_float16(f).bits, h.bits) << std::hex << b;
  }
}

TEST(Float16, RoundsToNearestEven) {
  int failures = 0;
  for (float f : rounding_inputs()) {
    uint16_t got = to_float16(f).bits, want = ref_half(f);
    bool ok = std::isnan(f) ? (got & 0x7fff) > 0x7c00 : got == want;
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << "to_float16(" << f << ") = 0x" << std::hex << got
                    << ", expected 0x" << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

// The cross-check against the compiler's _Float16 is platform code and
// lives in tests/platform/native_float16_test.cpp.

TEST(BFloat16, EveryBitPatternDecodesAndRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    bfloat16 h{uint16_t(b)};
    float f = to_float(h);
    ASSERT_EQ(bits_of(f), b << 16);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(to_float(to_bfloat16(f)))) << std::hex << b;
    } else {
      ASSERT_EQ(to_bfloat16(f).bits, h.bits) << std::hex << b;
    }
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  std::vector<float> v = rounding_inputs();
  // Midpoints between bfloat16 neighbours, and one f32 ulp either side.
  for (uint32_t b = 0; b < 0x7f80; b += 7) {
    uint32_t mid = (b << 16) | 0x8000u;
    for (uint32_t m : {mid, mid - 1, mid + 1}) {
      v.push_back(from_bits(m));
      v.push_back(-from_bits(m));
    }
  }
  v.push_back(from_bits(0x7f7f8000u));  // Halfway to inf: rounds to inf.
  v.push_back(from_bits(0x7f7f7fffu));
  int failures = 0;
  for (float f : v) {
    uint16_t got = to_bfloat16(f).bits, want = ref_bf16(f);
    bool ok = std::isnan(f) ? (got & 0x7fff) > 0x7f80 : got == want;
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << "to_bfloat16(" << f << ") = 0x" << std::hex << got
                    << ", expected 0x" << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DType, FromDoubleSaturatesAndMapsNaNToZero) {
  EXPECT_EQ(from_double<int32_t>(1e20), INT32_MAX);
  EXPECT_EQ(from_double<int32_t>(-1e20), INT32_MIN);
  EXPECT_EQ(from_double<uint8_t>(-3.0), 0);
  EXPECT_EQ(from_double<uint8_t>(300.0), 255);
  EXPECT_EQ(from_double<int64_t>(NAN), 0);
  EXPECT_EQ(from_double<int32_t>(-2.7), -2);
  EXPECT_TRUE(from_double<bool>(NAN));
  EXPECT_FALSE(from_double<bool>(-0.0));
}

}  // namespace
}  // namespace nascent
