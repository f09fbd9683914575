#include "nascent/nn/norm.h"

#include <fmt/format.h>

#include "nascent/autodiff/autodiff.h"

namespace nascent::nn {

namespace {

void check_normalized_shape(const char* layer, const Shape& shape) {
  if (shape.empty() || checked_numel(shape, layer) <= 0) {
    throw ValueError(fmt::format("{}: normalized shape {} must be non-empty",
                                 layer, to_string(shape)));
  }
}

void check_trailing(const char* layer, const Tensor& x, const Shape& shape) {
  bool ok = x.ndim() >= int(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) {
    ok = x.shape()[x.shape().size() - shape.size() + i] == shape[i];
  }
  if (!ok) {
    throw ShapeError(fmt::format("{}: input {} does not end in {}", layer,
                                 x.to_string(), to_string(shape)));
  }
}

}  // namespace

// --- BatchNorm2d
// -----------------------------------------------------------------

BatchNorm2d::BatchNorm2d(int64_t channels, Backend& backend, double eps,
                         double momentum, bool affine, DType dtype)
    : channels_(channels), eps_(eps), momentum_(momentum) {
  if (channels <= 0) {
    throw ValueError(
        fmt::format("BatchNorm2d: {} channels is not positive", channels));
  }
  if (affine) {
    weight_ = register_parameter("weight", ones({channels}, backend, dtype));
    bias_ = register_parameter("bias", zeros({channels}, backend, dtype));
  }
  running_mean_ =
      register_buffer("running_mean", zeros({channels}, backend, dtype));
  running_var_ =
      register_buffer("running_var", ones({channels}, backend, dtype));
  batches_tracked_ =
      register_buffer("num_batches_tracked", zeros({}, backend, DType::i64));
}

std::string BatchNorm2d::describe() const {
  return fmt::format("BatchNorm2d({}, eps={}, momentum={}{})", channels_, eps_,
                     momentum_, weight_ ? "" : ", affine=false");
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  if (x.ndim() != 4 || x.shape(1) != channels_) {
    throw ShapeError(
        fmt::format("BatchNorm2d({}): expected [N, {}, H, W], got "
                    "{}",
                    channels_, channels_, x.to_string()));
  }
  const Shape per_channel{1, channels_, 1, 1};
  Tensor mean_c, var_c;
  if (is_training()) {
    const int64_t n = x.shape(0) * x.shape(2) * x.shape(3);
    if (n <= 1) {
      throw ValueError(fmt::format(
          "BatchNorm2d: training needs more than one value per channel, got "
          "{}",
          x.to_string()));
    }
    mean_c = mean(x, {0, 2, 3}, true);
    var_c = var(x, {0, 2, 3}, 0, true);
    // Running estimates take the unbiased variance, as PyTorch; their update
    // is no part of the graph.
    autodiff::NoGradGuard no_grad;
    const double m = momentum_;
    Tensor unbiased = var_c.reshape({channels_}) * (double(n) / double(n - 1));
    set_value(*running_mean_,
              *running_mean_ * (1.0 - m) + mean_c.reshape({channels_}) * m);
    set_value(*running_var_, *running_var_ * (1.0 - m) + unbiased * m);
    set_value(*batches_tracked_, *batches_tracked_ + int64_t(1));
  } else {
    mean_c = running_mean_->reshape(per_channel);
    var_c = running_var_->reshape(per_channel);
  }
  Tensor y = (x - mean_c) * rsqrt(var_c + eps_);
  if (weight_) {
    y = y * weight_->reshape(per_channel) + bias_->reshape(per_channel);
  }
  return y;
}

// --- LayerNorm, RMSNorm
// ----------------------------------------------------------

LayerNorm::LayerNorm(Shape normalized_shape, Backend& backend, double eps,
                     bool affine, DType dtype)
    : shape_(std::move(normalized_shape)), eps_(eps) {
  check_normalized_shape("LayerNorm", shape_);
  if (affine) {
    weight_ = register_parameter("weight", ones(shape_, backend, dtype));
    bias_ = register_parameter("bias", zeros(shape_, backend, dtype));
  }
}

std::string LayerNorm::describe() const {
  return fmt::format("LayerNorm({}, eps={}{})", to_string(shape_), eps_,
                     weight_ ? "" : ", affine=false");
}

Tensor LayerNorm::forward(const Tensor& x) {
  check_trailing("LayerNorm", x, shape_);
  return layer_norm(x, weight_, bias_, eps_, int64_t(shape_.size()));
}

RMSNorm::RMSNorm(Shape normalized_shape, Backend& backend, double eps,
                 DType dtype)
    : shape_(std::move(normalized_shape)), eps_(eps) {
  check_normalized_shape("RMSNorm", shape_);
  weight_ = register_parameter("weight", ones(shape_, backend, dtype));
}

std::string RMSNorm::describe() const {
  return fmt::format("RMSNorm({}, eps={})", to_string(shape_), eps_);
}

Tensor RMSNorm::forward(const Tensor& x) {
  check_trailing("RMSNorm", x, shape_);
  return rms_norm(x, weight_, eps_, int64_t(shape_.size()));
}

}  // namespace nascent::nn
