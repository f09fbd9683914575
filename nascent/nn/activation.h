// Activation layers: thin modules over the element-wise ops, for use in
// Sequential.
#pragma once

#include <cstdint>
#include <string>

#include "nascent/core/ops.h"
#include "nascent/nn/module.h"

namespace nascent::nn {

class ReLU final : public Module {
 public:
  std::string describe() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override { return relu(x); }
};

// Exact (erf) GELU, or the tanh approximation.
class GELU final : public Module {
 public:
  explicit GELU(bool tanh_approximation = false) : tanh_(tanh_approximation) {}
  std::string describe() const override {
    return tanh_ ? "GELU(tanh)" : "GELU";
  }
  Tensor forward(const Tensor& x) override {
    return tanh_ ? gelu_tanh(x) : gelu(x);
  }

 private:
  bool tanh_;
};

class SiLU final : public Module {
 public:
  std::string describe() const override { return "SiLU"; }
  Tensor forward(const Tensor& x) override { return silu(x); }
};

class Sigmoid final : public Module {
 public:
  std::string describe() const override { return "Sigmoid"; }
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

class Tanh final : public Module {
 public:
  std::string describe() const override { return "Tanh"; }
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

class Softmax final : public Module {
 public:
  explicit Softmax(int64_t axis = -1) : axis_(axis) {}
  std::string describe() const override {
    return "Softmax(axis=" + std::to_string(axis_) + ")";
  }
  Tensor forward(const Tensor& x) override { return softmax(x, axis_); }

 private:
  int64_t axis_;
};

}  // namespace nascent::nn
