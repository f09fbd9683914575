#include <cmath>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

Tensor draw(RandomOp op, const Shape& shape, double a, double b,
            Backend& backend, Generator& gen, DType dtype) {
  const char* op_name = name(op);
  if (!is_floating(dtype) && op != RandomOp::bernoulli) {
    throw DTypeError(fmt::format("{}: needs a floating dtype, got {}", op_name,
                                 name(dtype)));
  }
  Tensor out = Tensor::empty(shape, dtype, backend);
  RandomParams p;
  p.seed = gen.seed();
  p.offset = gen.advance(uint64_t(out.numel()));
  p.a = a;
  p.b = b;
  backend.random(op, p, out);
  return out;
}

}  // namespace

Tensor uniform(const Shape& shape, double low, double high, Backend& backend,
               Generator& gen, DType dtype) {
  if (!(low <= high) || !std::isfinite(low) || !std::isfinite(high)) {
    throw ValueError(fmt::format(
        "uniform: need finite low <= high, got low {} high {}", low, high));
  }
  return draw(RandomOp::uniform, shape, low, high, backend, gen, dtype);
}

Tensor normal(const Shape& shape, double mean, double std, Backend& backend,
              Generator& gen, DType dtype) {
  if (!(std >= 0.0) || !std::isfinite(mean) || !std::isfinite(std)) {
    throw ValueError(fmt::format(
        "normal: need a finite mean and std >= 0, got mean {} std {}", mean,
        std));
  }
  return draw(RandomOp::normal, shape, mean, std, backend, gen, dtype);
}

Tensor bernoulli(const Shape& shape, double p, Backend& backend, Generator& gen,
                 DType dtype) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(fmt::format("bernoulli: p must be in [0, 1], got {}", p));
  }
  return draw(RandomOp::bernoulli, shape, p, 0.0, backend, gen, dtype);
}

Tensor rand(const Shape& shape, Backend& backend, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return uniform(shape, 0.0, 1.0, backend, gen, dtype);
}

Tensor randn(const Shape& shape, Backend& backend, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, backend, gen, dtype);
}

}  // namespace nascent
