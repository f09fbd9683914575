// The counter-based generator every backend shares: Philox-4x32-10 (Salmon
// et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
//
// Element i of a random tensor uses counter block (offset + i) / 4 and lane
// (offset + i) % 4 with key = seed, so its value depends on nothing but the
// seed, the offset and i: the same on every backend and thread count. The
// functions below are the definition; backends may vectorise them but must
// give the same bits.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace nascent {

inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    c0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    c1 = uint32_t(p1);
    c2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c3 = uint32_t(p0);
    k0 += 0x9E3779B9u;  // Weyl sequence key schedule.
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

// Uniform float in [0, 1) from the top 24 bits of one 32-bit word.
inline float uint_to_unit_float(uint32_t x) {
  return float(x >> 8) * (1.0f / 16777216.0f);
}
// Uniform double in [0, 1) from 53 bits of two words.
inline double uint_to_unit_double(uint32_t hi, uint32_t lo) {
  uint64_t v = (uint64_t(hi) << 21) ^ uint64_t(lo >> 11);
  return double(v & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// The four uniforms in [0, 1) of counter block `block`.
inline std::array<float, 4> uniform4(uint64_t seed, uint64_t block) {
  std::array<uint32_t, 4> r = philox4x32(block, seed);
  return {uint_to_unit_float(r[0]), uint_to_unit_float(r[1]),
          uint_to_unit_float(r[2]), uint_to_unit_float(r[3])};
}

// The four standard normals of counter block `block`: Box-Muller on lanes
// (0, 1) and (2, 3). 1 - u keeps the log finite.
inline std::array<float, 4> normal4(uint64_t seed, uint64_t block) {
  std::array<float, 4> u = uniform4(seed, block);
  constexpr float kTwoPi = 6.2831853071795864f;
  float r0 = std::sqrt(-2.0f * std::log(1.0f - u[0]));
  float r1 = std::sqrt(-2.0f * std::log(1.0f - u[2]));
  return {r0 * std::cos(kTwoPi * u[1]), r0 * std::sin(kTwoPi * u[1]),
          r1 * std::cos(kTwoPi * u[3]), r1 * std::sin(kTwoPi * u[3])};
}

// A seed plus a running offset: each draw of n elements advances the offset
// by n rounded up to a whole block, so successive draws do not overlap.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  // Returns the offset to use for n elements and advances past them.
  uint64_t advance(uint64_t n) {
    uint64_t start = offset_;
    offset_ += (n + 3) / 4 * 4;
    return start;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace nascent
