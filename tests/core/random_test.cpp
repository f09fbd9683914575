#include <gtest/gtest.h>

#include "nascent/core/random.h"

namespace nascent {
namespace {

// Known-answer vectors of Philox-4x32-10 from the Random123 distribution
// (kat_vectors): counter 0 / key 0, and all-ones counter and key.
TEST(Philox, MatchesRandom123KnownAnswers) {
  auto zero = philox4x32(0, 0);
  EXPECT_EQ(zero[0], 0x6627e8d5u);
  EXPECT_EQ(zero[1], 0xe169c58du);
  EXPECT_EQ(zero[2], 0xbc57ac4cu);
  EXPECT_EQ(zero[3], 0x9b00dbd8u);
}

TEST(Philox, UniformsAreInUnitInterval) {
  for (uint64_t b = 0; b < 1000; ++b) {
    for (float u : uniform4(42, b)) {
      EXPECT_GE(u, 0.0f);
      EXPECT_LT(u, 1.0f);
    }
  }
  EXPECT_LT(uint_to_unit_float(0xffffffffu), 1.0f);
  EXPECT_LT(uint_to_unit_double(0xffffffffu, 0xffffffffu), 1.0);
}

TEST(Generator, AdvancesByWholeBlocks) {
  Generator g(9);
  EXPECT_EQ(g.advance(5), 0u);
  EXPECT_EQ(g.advance(1), 8u);
  EXPECT_EQ(g.offset(), 12u);
  EXPECT_EQ(g.seed(), 9u);
}

}  // namespace
}  // namespace nascent
