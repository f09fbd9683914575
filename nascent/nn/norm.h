// Normalisation layers: BatchNorm2d (statistics over N, H, W per channel,
// running estimates for eval mode), LayerNorm and RMSNorm over the trailing
// axes (the core's fused layer_norm / rms_norm kernels).
#pragma once

#include <cstdint>
#include <string>

#include "nascent/core/ops.h"
#include "nascent/nn/module.h"

namespace nascent::nn {

// Training: normalises with the batch's mean and biased variance and moves
// running_mean / running_var (unbiased) by `momentum`; eval: uses them.
class BatchNorm2d final : public Module {
 public:
  BatchNorm2d(int64_t channels, Backend& backend, double eps = 1e-5,
              double momentum = 0.1, bool affine = true,
              DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  int64_t channels_;
  double eps_, momentum_;
  Tensor* weight_ = nullptr;
  Tensor* bias_ = nullptr;
  Tensor* running_mean_;
  Tensor* running_var_;
  Tensor* batches_tracked_;  // i64 0-d, as PyTorch's num_batches_tracked.
};

class LayerNorm final : public Module {
 public:
  LayerNorm(Shape normalized_shape, Backend& backend, double eps = 1e-5,
            bool affine = true, DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  Shape shape_;
  double eps_;
  Tensor* weight_ = nullptr;
  Tensor* bias_ = nullptr;
};

class RMSNorm final : public Module {
 public:
  RMSNorm(Shape normalized_shape, Backend& backend, double eps = 1e-6,
          DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  Shape shape_;
  double eps_;
  Tensor* weight_;
};

}  // namespace nascent::nn
