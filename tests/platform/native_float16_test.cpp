// Cross-checks core's f32 -> f16 rounding against the compiler's own
// _Float16 where it has one (g++ on x86-64 and AArch64; emscripten's clang 14
// has none, so this file adds no test there). Platform code lives here, not
// under tests/core, which mirrors the device-free core.
#include <cmath>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "nascent/core/dtype.h"

#if defined(__FLT16_MANT_DIG__)

namespace nascent {
namespace {

uint16_t native_half_bits(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

TEST(Float16, MatchesTheCompilersHalfType) {
  // Exact midpoints between neighbouring halves (and one f32 ulp either
  // side) decide ties; a stride through all f32 patterns covers the rest.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float x = to_float(float16{uint16_t(h)});
    float y = to_float(float16{uint16_t(h + 1)});
    float mid = (x + y) / 2;  // Exact: a half has 11 significant bits.
    for (float m :
         {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      ASSERT_EQ(to_float16(m).bits, native_half_bits(m)) << m;
      ASSERT_EQ(to_float16(-m).bits, native_half_bits(-m)) << -m;
    }
  }
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) {
    float f;
    uint32_t bits = uint32_t(u);
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(to_float16(f).bits, native_half_bits(f)) << f;
  }
}

}  // namespace
}  // namespace nascent

#endif
