// Host-side float64 references and comparisons for the conformance suite.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nascent/core/ops.h"

namespace nascent::conformance {

// A row-major float64 copy of a tensor's values.
struct HostTensor {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return int64_t(v.size()); }
  // Element at a multi-index (broadcasting size-1 axes of this tensor
  // against a longer index, NumPy style).
  double at(const std::vector<int64_t>& index) const;
};

HostTensor to_host(const Tensor& t);

// How an input is laid out in memory; the suite runs every op on each.
enum class Layout { contiguous, transposed, sliced, broadcast };
const char* name(Layout layout);
inline constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed,
                                      Layout::sliced, Layout::broadcast};

// A random tensor of `shape` and `dtype` laid out as asked: transposed
// builds it with its last two axes swapped and views them back, sliced takes
// every other element of a larger buffer, broadcast expands a size-1 first
// axis. Values are uniform in [low, high) (rounded for integer dtypes).
Tensor random_tensor(const Shape& shape, DType dtype, Backend& backend,
                     uint64_t seed, Layout layout = Layout::contiguous,
                     double low = -2.0, double high = 2.0);

// Calls fn on every multi-index of `shape` in row-major order.
void for_each_index(const Shape& shape,
                    const std::function<void(const std::vector<int64_t>&)>& fn);

// Tolerances that fit a dtype's precision for results of a few roundings.
double default_rtol(DType dtype);
double default_atol(DType dtype);

// Expects `got` to match `want` in shape and values (NaN matches NaN, inf
// matches inf of the same sign).
void expect_close(const Tensor& got, const HostTensor& want,
                  const std::string& label, double rtol = -1.0,
                  double atol = -1.0);

// For f16/bf16 results computed in f32 and rounded once on the way out:
// expects each within half a unit in the last place of the storage type
// (plus 1% of it, plus f32_error for the arithmetic before, where terms
// larger than the result cancel), which rounding to nearest meets and
// truncation does not. Other dtypes pass.
void expect_rounded(const Tensor& got, const HostTensor& want,
                    const std::string& label, double f32_error = 0.0);

// The most that rounding x to 8 bits per block (32 values, or 256 for the
// 256-value k-quants, as the CPU's qmatmul does for weights of a block
// type) moves the dot product of x [k] with a decoded weight row w [k]:
// half a step of each block's scale (amax / 127) times the block's sum of
// |w|.
double quantized_x_error(const double* x, const float* w, int64_t k,
                         QuantType type);

}  // namespace nascent::conformance
