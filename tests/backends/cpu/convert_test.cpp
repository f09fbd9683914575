// The CPU backend's f32 <-> f16/bf16 conversions (SIMD on contiguous runs,
// scalar otherwise) must give the bits of core's scalar conversions.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

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

std::vector<uint16_t> all_16bit() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = uint16_t(i);
  return v;
}

// Rounding cases for both narrow types: midpoints between neighbours of
// either type and one f32 ulp off, overflow edges, and a spread of f32 bit
// patterns (NaN payloads included).
std::vector<float> narrowing_inputs() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float x = to_float(float16{uint16_t(h)});
    float y = to_float(float16{uint16_t(h + 1)});
    float mid = (x + y) / 2;
    v.insert(v.end(), {x, mid, std::nextafter(mid, 0.0f),
                       std::nextafter(mid, INFINITY), -mid});
  }
  for (uint32_t b = 0; b < 0x7f80; b += 3) {
    uint32_t mid = (b << 16) | 0x8000u;
    v.insert(v.end(), {from_bits(mid), from_bits(mid - 1), from_bits(mid + 1),
                       -from_bits(mid)});
  }
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 65537) {
    v.push_back(from_bits(uint32_t(u)));
  }
  v.insert(v.end(), {65504.0f, 65519.996f, 65520.0f, from_bits(0x7f7f8000u),
                     from_bits(0x7f7f7fffu), INFINITY, -INFINITY, NAN});
  return v;
}

template <class H>
void check_widening(Backend& backend, DType dt) {
  std::vector<uint16_t> bits = all_16bit();
  Tensor h = from_data(bits.data(), {65536}, dt, backend);
  auto check = [&](const Tensor& src, const std::string& label) {
    std::vector<float> got = src.cast(DType::f32).to_vector<float>();
    // The source bits, read back through a same-dtype copy.
    std::vector<H> in = src.to_vector<H>();
    ASSERT_EQ(got.size(), in.size());
    for (size_t i = 0; i < got.size(); ++i) {
      float want = to_float(in[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i])) << label << " " << in[i].bits;
      } else {
        ASSERT_EQ(bits_of(got[i]), bits_of(want)) << label << " " << in[i].bits;
      }
    }
  };
  check(h, "contiguous");
  check(h.slice(0, 1, 65536, 2), "strided");
  for (int64_t n = 1; n <= 17; ++n) check(h.narrow(0, 3, n), "tail");
}

template <class H>
void check_narrowing(Backend& backend, DType dt, H (*scalar)(float)) {
  std::vector<float> in = narrowing_inputs();
  Tensor f = from_vector(in, backend);
  auto check = [&](const Tensor& src, const std::vector<float>& values,
                   const std::string& label) {
    std::vector<H> got = src.cast(dt).to_vector<H>();
    ASSERT_EQ(got.size(), values.size());
    int failures = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      uint16_t want = scalar(values[i]).bits;
      bool ok = std::isnan(values[i]) ? std::isnan(to_float(got[i]))
                                      : got[i].bits == want;
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << label << ": " << name(dt) << "(" << values[i]
                      << ") = 0x" << std::hex << got[i].bits << ", expected 0x"
                      << want;
      }
    }
    EXPECT_EQ(failures, 0) << label;
  };
  check(f, in, "contiguous");
  std::vector<float> odd;
  for (size_t i = 1; i < in.size(); i += 2) odd.push_back(in[i]);
  check(f.slice(0, 1, int64_t(in.size()), 2), odd, "strided");
  for (int64_t n = 1; n <= 17; ++n) {
    std::vector<float> part(in.begin() + 5, in.begin() + 5 + n);
    check(f.narrow(0, 5, n), part, "tail");
  }
}

TEST(CpuConvert, HalfToFloatEveryBitPattern) {
  cpu::Backend backend;
  check_widening<float16>(backend, DType::f16);
}

TEST(CpuConvert, BFloat16ToFloatEveryBitPattern) {
  cpu::Backend backend;
  check_widening<bfloat16>(backend, DType::bf16);
}

TEST(CpuConvert, FloatToHalfMatchesScalar) {
  cpu::Backend backend;
  check_narrowing<float16>(backend, DType::f16, &to_float16);
}

TEST(CpuConvert, FloatToBFloat16MatchesScalar) {
  cpu::Backend backend;
  check_narrowing<bfloat16>(backend, DType::bf16, &to_bfloat16);
}

TEST(CpuConvert, HalfAndBFloat16ConvertThroughFloat) {
  cpu::Backend backend;
  std::vector<uint16_t> bits = all_16bit();
  Tensor h = from_data(bits.data(), {65536}, DType::f16, backend);
  std::vector<bfloat16> hb = h.cast(DType::bf16).to_vector<bfloat16>();
  Tensor b = from_data(bits.data(), {65536}, DType::bf16, backend);
  std::vector<float16> bh = b.cast(DType::f16).to_vector<float16>();
  for (uint32_t i = 0; i < 65536; ++i) {
    float hf = to_float(float16{uint16_t(i)});
    float bf = to_float(bfloat16{uint16_t(i)});
    if (std::isnan(hf)) {
      EXPECT_TRUE(std::isnan(to_float(hb[i])));
    } else {
      EXPECT_EQ(hb[i].bits, to_bfloat16(hf).bits) << i;
    }
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(to_float(bh[i])));
    } else {
      EXPECT_EQ(bh[i].bits, to_float16(bf).bits) << i;
    }
  }
}

}  // namespace
}  // namespace nascent
