#include "nascent/nn/layers.h"

#include <cmath>

#include <fmt/format.h>

#include "nascent/nn/init.h"

namespace nascent::nn {

namespace {

// PyTorch's default: weight kaiming_uniform(a = sqrt(5)), which is uniform
// in +-1/sqrt(fan_in), and the bias uniform in the same range.
Tensor default_weight(const Shape& shape, Backend& backend, Generator& gen,
                      DType dtype) {
  return init::kaiming_uniform(shape, backend, gen, std::sqrt(5.0),
                               init::FanMode::fan_in, dtype);
}
Tensor default_bias(int64_t n, int64_t fan_in, Backend& backend, Generator& gen,
                    DType dtype) {
  double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  return uniform({n}, -bound, bound, backend, gen, dtype);
}

void check_positive(const char* layer, const char* what, int64_t v) {
  if (v <= 0) {
    throw ValueError(
        fmt::format("{}: {} must be positive, got {}", layer, what, v));
  }
}

Pool2dParams pool_params(const char* layer, int64_t kernel, int64_t stride,
                         int64_t padding) {
  check_positive(layer, "kernel", kernel);
  if (stride < 0 || padding < 0) {
    throw ValueError(
        fmt::format("{}: stride {} and padding {} must not be negative", layer,
                    stride, padding));
  }
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = kernel;
  p.stride[0] = p.stride[1] = stride == 0 ? kernel : stride;
  p.padding[0] = p.padding[1] = padding;
  return p;
}

}  // namespace

// --- Linear ------------------------------------------------------------------

Linear::Linear(int64_t in_features, int64_t out_features, Backend& backend,
               Generator& gen, bool bias, DType dtype)
    : in_(in_features), out_(out_features) {
  check_positive("Linear", "in_features", in_features);
  check_positive("Linear", "out_features", out_features);
  weight_ = register_parameter(
      "weight", default_weight({out_, in_}, backend, gen, dtype));
  if (bias) {
    bias_ = register_parameter("bias",
                               default_bias(out_, in_, backend, gen, dtype));
  }
}

std::string Linear::describe() const {
  return fmt::format("Linear({}, {}{})", in_, out_,
                     bias_ ? "" : ", bias=false");
}

Tensor Linear::forward(const Tensor& x) {
  // The GEMM reads the transposed weight through its strides (no copy), and
  // autodiff gives the weight's gradient the weight's layout.
  Tensor y = matmul(x, weight_->transpose(0, 1));
  return bias_ ? y + *bias_ : y;
}

// --- Conv2d ------------------------------------------------------------------

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Conv2dOptions options,
               Backend& backend, Generator& gen, DType dtype)
    : in_(in_channels), out_(out_channels), options_(options) {
  check_positive("Conv2d", "in_channels", in_channels);
  check_positive("Conv2d", "out_channels", out_channels);
  check_positive("Conv2d", "kernel", options.kernel);
  check_positive("Conv2d", "groups", options.groups);
  if (in_ % options.groups != 0 || out_ % options.groups != 0) {
    throw ValueError(
        fmt::format("Conv2d: channels {} -> {} are not divisible by groups {}",
                    in_, out_, options.groups));
  }
  Shape shape{out_, in_ / options.groups, options.kernel, options.kernel};
  weight_ =
      register_parameter("weight", default_weight(shape, backend, gen, dtype));
  if (options.bias) {
    int64_t fan_in = init::fans(shape).first;
    bias_ = register_parameter("bias",
                               default_bias(out_, fan_in, backend, gen, dtype));
  }
}

Conv2dParams Conv2d::params() const {
  Conv2dParams p;
  p.stride[0] = p.stride[1] = options_.stride;
  p.padding[0] = p.padding[1] = options_.padding;
  p.dilation[0] = p.dilation[1] = options_.dilation;
  p.groups = options_.groups;
  return p;
}

std::string Conv2d::describe() const {
  return fmt::format(
      "Conv2d({}, {}, kernel={}, stride={}, padding={}{}{}{})", in_, out_,
      options_.kernel, options_.stride, options_.padding,
      options_.dilation != 1 ? fmt::format(", dilation={}", options_.dilation)
                             : "",
      options_.groups != 1 ? fmt::format(", groups={}", options_.groups) : "",
      bias_ ? "" : ", bias=false");
}

Tensor Conv2d::forward(const Tensor& x) {
  // The bias rides in the convolution (an extra GEMM column), not a pass.
  return conv2d(x, *weight_, bias_, params());
}

// --- Pooling, Flatten
// ----------------------------------------------------------

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : p_(pool_params("MaxPool2d", kernel, stride, padding)) {}

std::string MaxPool2d::describe() const {
  return fmt::format("MaxPool2d(kernel={}, stride={}, padding={})",
                     p_.kernel[0], p_.stride[0], p_.padding[0]);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, p_);
}

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding,
                     bool count_include_pad)
    : p_(pool_params("AvgPool2d", kernel, stride, padding)) {
  p_.count_include_pad = count_include_pad;
}

std::string AvgPool2d::describe() const {
  return fmt::format("AvgPool2d(kernel={}, stride={}, padding={}{})",
                     p_.kernel[0], p_.stride[0], p_.padding[0],
                     p_.count_include_pad ? "" : ", count_include_pad=false");
}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, p_);
}

std::string Flatten::describe() const {
  return fmt::format("Flatten({}, {})", start_, end_);
}

Tensor Flatten::forward(const Tensor& x) {
  return x.flatten(start_, end_);
}

// --- Dropout
// -------------------------------------------------------------------

Dropout::Dropout(double p, Backend& backend, uint64_t seed)
    : p_(p), gen_(seed) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(fmt::format("Dropout: p = {} is outside [0, 1]", p));
  }
  rng_state_ = register_buffer(
      "rng_state", from_vector<int64_t>({int64_t(seed), 0}, Shape{2}, backend));
}

std::string Dropout::describe() const {
  return fmt::format("Dropout(p={})", p_);
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  if (p_ == 1.0) return x * 0.0;
  // The 1 / (1 - p) scale goes into the mask, so x is read once.
  Tensor keep = bernoulli(x.shape(), 1.0 - p_, x.backend(), gen_, x.dtype());
  return x * (keep * (1.0 / (1.0 - p_)));
}

void Dropout::before_save() {
  set_value(*rng_state_,
            from_vector<int64_t>({int64_t(gen_.seed()), int64_t(gen_.offset())},
                                 Shape{2}, rng_state_->backend()));
}

void Dropout::after_load() {
  std::vector<int64_t> s = rng_state_->to_vector<int64_t>();
  if (s[1] < 0 || s[1] % 4 != 0) {
    throw ValueError(fmt::format(
        "Dropout: loaded random offset {} is not a non-negative multiple of 4",
        s[1]));
  }
  gen_ = Generator(uint64_t(s[0]));
  gen_.advance(uint64_t(s[1]));
}

// --- Embedding
// -----------------------------------------------------------------

Embedding::Embedding(int64_t num, int64_t dim, Backend& backend, Generator& gen,
                     DType dtype)
    : num_(num), dim_(dim) {
  check_positive("Embedding", "num", num);
  check_positive("Embedding", "dim", dim);
  // PyTorch's default: N(0, 1).
  weight_ = register_parameter(
      "weight", normal({num_, dim_}, 0.0, 1.0, backend, gen, dtype));
}

std::string Embedding::describe() const {
  return fmt::format("Embedding({}, {})", num_, dim_);
}

Tensor Embedding::forward(const Tensor& ids) {
  return embedding(*weight_, ids);
}

// --- Sequential
// ----------------------------------------------------------------

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) add(std::move(m));
}

Sequential& Sequential::add(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, child] : children()) y = child->forward(y);
  return y;
}

}  // namespace nascent::nn
