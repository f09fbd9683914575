// Normal random floats for the quantized-kernel tests: mt19937, so a seed
// gives the same weights and activations on every platform.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace nascent {

inline std::vector<float> random_values(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace nascent
