// Optimizers: SGD (momentum, Nesterov, weight decay), Adam and AdamW, with
// PyTorch's update rules. Each parameter's update is one core op
// (sgd_update, adam_update in core/ops.h) on the parameters' backend, so it
// runs where the parameters live, in one pass that writes the parameter and
// its state in place; parameters and optimizer state are persistent there.
//
// An optimizer holds the slots of the parameters it was given (from
// Module::named_parameters()), which must outlive it, and marks them
// persistent; their names key the state in state_dict(), e.g.
// "exp_avg.fc1.weight". Updates are written into the parameters in place.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nascent/core/tensor.h"
#include "nascent/nn/module.h"

namespace nascent::optim {

// Tensors (moments, momentum buffers) and a JSON object of the rest
// (hyper-parameters, step counts).
struct OptimizerState {
  std::map<std::string, Tensor> tensors;
  nlohmann::json config = nlohmann::json::object();
};

class Optimizer {
 public:
  Optimizer(std::vector<nn::NamedTensor> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual std::string name() const = 0;

  // One update: grads[i] is the gradient of parameter i (same shape and
  // dtype); an undefined one leaves that parameter and its state alone.
  void step(const std::vector<Tensor>& grads);

  double lr() const { return lr_; }
  void set_lr(double lr);
  // Updates applied so far.
  int64_t step_count() const { return steps_; }
  const std::vector<nn::NamedTensor>& params() const { return params_; }

  OptimizerState state_dict() const;
  // Restores the state, the learning rate and the step counts (the other
  // hyper-parameters stay the constructor's; the saved ones are there to be
  // read). ValueError naming the entry if the state is of another
  // optimizer, other parameters or other shapes; nothing changes unless all
  // of it fits.
  void load_state_dict(const OptimizerState& state);

 protected:
  virtual void update(size_t i, const Tensor& grad) = 0;
  // Hyper-parameters and per-parameter state, to and from `state`.
  virtual void save(OptimizerState& state) const = 0;
  virtual void load(const OptimizerState& state) = 0;
  // Checks that `state` has tensor `key` shaped like parameter i.
  const Tensor* state_tensor(const OptimizerState& state,
                             const std::string& key, size_t i,
                             bool required) const;

  std::vector<nn::NamedTensor> params_;
  double lr_;
  int64_t steps_ = 0;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;  // Added to the gradient (L2).
  bool nesterov = false;
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<nn::NamedTensor> params, SGDOptions options);
  std::string name() const override { return "SGD"; }

 protected:
  void update(size_t i, const Tensor& grad) override;
  void save(OptimizerState& state) const override;
  void load(const OptimizerState& state) override;

 private:
  SGDOptions o_;
  std::vector<Tensor> momentum_;  // Undefined until a parameter's first step.
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 in the gradient; AdamW: decoupled.
};

// Adam (Kingma and Ba), or AdamW (Loshchilov and Hutter) when `decoupled`:
// weight decay shrinks the parameter directly instead of entering the
// moments.
class Adam : public Optimizer {
 public:
  Adam(std::vector<nn::NamedTensor> params, AdamOptions options,
       bool decoupled = false);
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 protected:
  void update(size_t i, const Tensor& grad) override;
  void save(OptimizerState& state) const override;
  void load(const OptimizerState& state) override;

 private:
  AdamOptions o_;
  bool decoupled_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<int64_t> param_steps_;  // Bias correction counts per parameter.
};

class AdamW final : public Adam {
 public:
  // PyTorch's AdamW default weight decay is 0.01.
  AdamW(std::vector<nn::NamedTensor> params, AdamOptions options)
      : Adam(std::move(params), options, true) {}
};

// Scales the gradients in place of the vector so that their joint L2 norm
// is at most max_norm (coefficient max_norm / (norm + 1e-6), capped at 1)
// and returns the norm before clipping as a 0-d tensor. Runs on the
// gradients' backend, with no read-back.
Tensor clip_grad_norm(std::vector<Tensor>& grads, double max_norm);

}  // namespace nascent::optim
