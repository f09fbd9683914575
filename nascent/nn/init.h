// Parameter initialisers (PyTorch's torch.nn.init, as new tensors drawn
// from a Generator, so a seed fixes a model's starting point on every
// backend).
//
// Fans: for a weight [out, in, k...] fan_in = in * prod(k) and fan_out =
// out * prod(k); a 1-D tensor has fan_in = fan_out = its size.
#pragma once

#include <cstdint>
#include <utility>

#include "nascent/core/ops.h"

namespace nascent::nn::init {

enum class FanMode { fan_in, fan_out };

// (fan_in, fan_out); ValueError for a 0-d shape.
std::pair<int64_t, int64_t> fans(const Shape& shape);

// Gain of a leaky ReLU with negative slope `a` (a = 0 is ReLU): sqrt(2 /
// (1 + a^2)).
double leaky_relu_gain(double a);

// Uniform in [-b, b] with b = gain * sqrt(3 / fan), gain = leaky_relu_gain(a).
// PyTorch's default for Linear and Conv2d weights is a = sqrt(5).
Tensor kaiming_uniform(const Shape& shape, Backend& backend, Generator& gen,
                       double a = 0.0, FanMode mode = FanMode::fan_in,
                       DType dtype = DType::f32);
// Normal with std = gain / sqrt(fan).
Tensor kaiming_normal(const Shape& shape, Backend& backend, Generator& gen,
                      double a = 0.0, FanMode mode = FanMode::fan_in,
                      DType dtype = DType::f32);
// Uniform in [-b, b], b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform(const Shape& shape, Backend& backend, Generator& gen,
                      double gain = 1.0, DType dtype = DType::f32);
// Normal with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal(const Shape& shape, Backend& backend, Generator& gen,
                     double gain = 1.0, DType dtype = DType::f32);
// Normal(mean, std), uniform(low, high), zeros and ones are the core ops
// normal(), uniform(), zeros(), ones().

}  // namespace nascent::nn::init
