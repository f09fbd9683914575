#include "nascent/nn/init.h"

#include <cmath>

#include <fmt/format.h>

namespace nascent::nn::init {

std::pair<int64_t, int64_t> fans(const Shape& shape) {
  if (shape.empty()) {
    throw ValueError("init: a 0-d tensor has no fan in or out");
  }
  if (shape.size() == 1) return {shape[0], shape[0]};
  int64_t receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

double leaky_relu_gain(double a) {
  return std::sqrt(2.0 / (1.0 + a * a));
}

namespace {

double fan_of(const Shape& shape, FanMode mode, const char* op) {
  auto [in, out] = fans(shape);
  int64_t fan = mode == FanMode::fan_in ? in : out;
  if (fan <= 0) {
    throw ValueError(
        fmt::format("{}: shape {} has no fan", op, to_string(shape)));
  }
  return double(fan);
}

}  // namespace

Tensor kaiming_uniform(const Shape& shape, Backend& backend, Generator& gen,
                       double a, FanMode mode, DType dtype) {
  double bound = leaky_relu_gain(a) *
                 std::sqrt(3.0 / fan_of(shape, mode, "kaiming_uniform"));
  return uniform(shape, -bound, bound, backend, gen, dtype);
}

Tensor kaiming_normal(const Shape& shape, Backend& backend, Generator& gen,
                      double a, FanMode mode, DType dtype) {
  double std =
      leaky_relu_gain(a) / std::sqrt(fan_of(shape, mode, "kaiming_normal"));
  return normal(shape, 0.0, std, backend, gen, dtype);
}

Tensor xavier_uniform(const Shape& shape, Backend& backend, Generator& gen,
                      double gain, DType dtype) {
  auto [in, out] = fans(shape);
  if (in + out <= 0) {
    throw ValueError(
        fmt::format("xavier_uniform: shape {} has no fan", to_string(shape)));
  }
  double bound = gain * std::sqrt(6.0 / double(in + out));
  return uniform(shape, -bound, bound, backend, gen, dtype);
}

Tensor xavier_normal(const Shape& shape, Backend& backend, Generator& gen,
                     double gain, DType dtype) {
  auto [in, out] = fans(shape);
  if (in + out <= 0) {
    throw ValueError(
        fmt::format("xavier_normal: shape {} has no fan", to_string(shape)));
  }
  double std = gain * std::sqrt(2.0 / double(in + out));
  return normal(shape, 0.0, std, backend, gen, dtype);
}

}  // namespace nascent::nn::init
