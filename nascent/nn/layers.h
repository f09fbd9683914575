// The standard layers. Weights follow PyTorch's layouts and default
// initialisation, so state dicts carry over: Linear weight [out, in],
// Conv2d weight [out, in / groups, kh, kw], both drawn uniform in
// +-1/sqrt(fan_in) (kaiming_uniform with a = sqrt(5)), as are the biases.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nascent/core/ops.h"
#include "nascent/nn/module.h"

namespace nascent::nn {

// y = x @ weight^T + bias over the last axis of x.
class Linear final : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Backend& backend,
         Generator& gen, bool bias = true, DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;
  Tensor& weight() { return *weight_; }
  Tensor* bias() { return bias_; }

 private:
  int64_t in_, out_;
  Tensor* weight_;
  Tensor* bias_ = nullptr;
};

struct Conv2dOptions {
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

class Conv2d final : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Conv2dOptions options,
         Backend& backend, Generator& gen, DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;
  Tensor& weight() { return *weight_; }
  Tensor* bias() { return bias_; }
  Conv2dParams params() const;

 private:
  int64_t in_, out_;
  Conv2dOptions options_;
  Tensor* weight_;
  Tensor* bias_ = nullptr;
};

// Pooling windows of `kernel`, stride defaulting to the kernel.
class MaxPool2d final : public Module {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  Pool2dParams p_;
};

class AvgPool2d final : public Module {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0,
                     bool count_include_pad = true);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  Pool2dParams p_;
};

// Merges axes start..end (the default keeps the batch axis).
class Flatten final : public Module {
 public:
  explicit Flatten(int64_t start = 1, int64_t end = -1)
      : start_(start), end_(end) {}
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 private:
  int64_t start_, end_;
};

// Zeroes each element with probability p in training and scales the rest by
// 1 / (1 - p); the identity in eval mode. Its random stream (seed and
// offset) is part of the state dict, so a resumed run drops the same ones.
class Dropout final : public Module {
 public:
  explicit Dropout(double p, Backend& backend, uint64_t seed = 0);
  std::string describe() const override;
  Tensor forward(const Tensor& x) override;

 protected:
  void before_save() override;
  void after_load() override;

 private:
  double p_;
  Generator gen_;
  Tensor* rng_state_;  // i64 [seed, offset]
};

// Rows of weight [num, dim] looked up by integer ids of any shape.
class Embedding final : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Backend& backend, Generator& gen,
            DType dtype = DType::f32);
  std::string describe() const override;
  Tensor forward(const Tensor& ids) override;
  Tensor& weight() { return *weight_; }

 private:
  int64_t num_, dim_;
  Tensor* weight_;
};

// Runs its children in order; they are named "0", "1", ...
class Sequential final : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  Sequential& add(std::shared_ptr<Module> module);
  std::string describe() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const { return *children()[i].second; }
};

}  // namespace nascent::nn
