#include "nascent/optim/optimizer.h"

#include <cmath>

#include <fmt/format.h>

#include "nascent/core/ops.h"

namespace nascent::optim {

using nlohmann::json;

namespace {

void check_non_negative(const char* opt, const char* what, double v) {
  if (!(v >= 0.0) || !std::isfinite(v)) {
    throw ValueError(
        fmt::format("{}: {} = {} must be finite and >= 0", opt, what, v));
  }
}

// A number from a loaded config; ValueError naming it if absent or not one.
double number(const json& config, const char* key, const std::string& opt) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number()) {
    throw ValueError(
        fmt::format("{} load_state_dict: \"{}\" is missing or "
                    "not a number",
                    opt, key));
  }
  return it->get<double>();
}

}  // namespace

Optimizer::Optimizer(std::vector<nn::NamedTensor> params, double lr)
    : params_(std::move(params)), lr_(lr) {
  check_non_negative("optimizer", "lr", lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].tensor || !params_[i].tensor->defined()) {
      throw ValueError(fmt::format(
          "optimizer: parameter {} (\"{}\") is undefined", i, params_[i].name));
    }
    if (!is_floating(params_[i].tensor->dtype())) {
      throw DTypeError(
          fmt::format("optimizer: parameter \"{}\" is {}, not floating",
                      params_[i].name, params_[i].tensor->to_string()));
    }
    if (!params_[i].tensor->is_contiguous()) {
      throw ValueError(fmt::format(
          "optimizer: parameter \"{}\" {} is not contiguous (updates are "
          "written in place, in one pass)",
          params_[i].name, params_[i].tensor->to_string()));
    }
    nn::persistent(*params_[i].tensor);
    for (size_t j = 0; j < i; ++j) {
      if (params_[j].name == params_[i].name) {
        throw ValueError(fmt::format(
            "optimizer: parameter name \"{}\" appears twice", params_[i].name));
      }
    }
  }
}

void Optimizer::set_lr(double lr) {
  check_non_negative(name().c_str(), "lr", lr);
  lr_ = lr;
}

void Optimizer::step(const std::vector<Tensor>& grads) {
  if (grads.size() != params_.size()) {
    throw ValueError(fmt::format("{}: step got {} gradients for {} parameters",
                                 name(), grads.size(), params_.size()));
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    const Tensor& p = *params_[i].tensor;
    if (grads[i].shape() != p.shape() || grads[i].dtype() != p.dtype()) {
      throw ShapeError(fmt::format(
          "{}: gradient {} does not match parameter \"{}\" {}", name(),
          grads[i].to_string(), params_[i].name, p.to_string()));
    }
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) update(i, grads[i]);
  }
  ++steps_;
}

const Tensor* Optimizer::state_tensor(const OptimizerState& state,
                                      const std::string& key, size_t i,
                                      bool required) const {
  auto it = state.tensors.find(key);
  if (it == state.tensors.end()) {
    if (required) {
      throw ValueError(
          fmt::format("{} load_state_dict: tensor \"{}\" is "
                      "missing",
                      name(), key));
    }
    return nullptr;
  }
  const Tensor& p = *params_[i].tensor;
  if (it->second.shape() != p.shape()) {
    throw ShapeError(fmt::format(
        "{} load_state_dict: \"{}\" is {} but parameter \"{}\" is {}", name(),
        key, it->second.to_string(), params_[i].name, p.to_string()));
  }
  return &it->second;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState state;
  state.config["optimizer"] = name();
  state.config["lr"] = lr_;
  state.config["steps"] = steps_;
  json names = json::array();
  for (const nn::NamedTensor& p : params_) names.push_back(p.name);
  state.config["params"] = names;
  save(state);
  return state;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  const json& c = state.config;
  if (!c.is_object() || c.value("optimizer", "") != name()) {
    throw ValueError(fmt::format(
        "{} load_state_dict: the state is of optimizer \"{}\"", name(),
        c.is_object() ? c.value("optimizer", "(none)") : "(none)"));
  }
  json names = json::array();
  for (const nn::NamedTensor& p : params_) names.push_back(p.name);
  if (c.value("params", json::array()) != names) {
    throw ValueError(fmt::format(
        "{} load_state_dict: the state is for parameters {}, this optimizer "
        "has {}",
        name(), c.value("params", json::array()).dump(), names.dump()));
  }
  const double lr = number(c, "lr", name());
  const double steps = number(c, "steps", name());
  check_non_negative(name().c_str(), "lr", lr);
  if (!(steps >= 0) || steps != std::floor(steps)) {
    throw ValueError(
        fmt::format("{} load_state_dict: steps = {}", name(), steps));
  }
  load(state);  // Validates everything before it changes anything.
  lr_ = lr;
  steps_ = int64_t(steps);
}

// --- SGD ---------------------------------------------------------------------

SGD::SGD(std::vector<nn::NamedTensor> params, SGDOptions options)
    : Optimizer(std::move(params), options.lr), o_(options) {
  check_non_negative("SGD", "momentum", o_.momentum);
  check_non_negative("SGD", "dampening", o_.dampening);
  check_non_negative("SGD", "weight_decay", o_.weight_decay);
  if (o_.nesterov && (o_.momentum <= 0.0 || o_.dampening != 0.0)) {
    throw ValueError(
        "SGD: Nesterov momentum needs momentum > 0 and zero "
        "dampening");
  }
  momentum_.resize(params_.size());
}

void SGD::update(size_t i, const Tensor& grad) {
  Tensor& p = *params_[i].tensor;
  OptimParams u;
  u.lr = lr_;
  u.weight_decay = o_.weight_decay;
  u.momentum = o_.momentum;
  u.dampening = o_.dampening;
  u.nesterov = o_.nesterov;
  Tensor* buf = nullptr;
  if (o_.momentum != 0.0) {
    if (!momentum_[i].defined()) {
      // The first step writes the gradient into it (no dampening), as
      // PyTorch does.
      momentum_[i] =
          nn::persistent(Tensor::empty(p.shape(), p.dtype(), p.backend()));
      u.first_step = true;
    }
    buf = &momentum_[i];
  }
  sgd_update(p, grad, buf, u);
}

void SGD::save(OptimizerState& state) const {
  state.config["momentum"] = o_.momentum;
  state.config["dampening"] = o_.dampening;
  state.config["weight_decay"] = o_.weight_decay;
  state.config["nesterov"] = o_.nesterov;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (momentum_[i].defined()) {
      state.tensors["momentum_buffer." + params_[i].name] = momentum_[i];
    }
  }
}

void SGD::load(const OptimizerState& state) {
  std::vector<Tensor> loaded(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor* t =
        state_tensor(state, "momentum_buffer." + params_[i].name, i, false);
    if (t) {
      const Tensor& p = *params_[i].tensor;
      loaded[i] = t->to(p.backend()).cast(p.dtype()).clone();
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    momentum_[i] = Tensor();
    if (loaded[i].defined()) nn::set_value(momentum_[i], loaded[i]);
  }
}

// --- Adam, AdamW -------------------------------------------------------------

Adam::Adam(std::vector<nn::NamedTensor> params, AdamOptions options,
           bool decoupled)
    : Optimizer(std::move(params), options.lr),
      o_(options),
      decoupled_(decoupled) {
  const char* n = decoupled ? "AdamW" : "Adam";
  check_non_negative(n, "eps", o_.eps);
  check_non_negative(n, "weight_decay", o_.weight_decay);
  for (double beta : {o_.beta1, o_.beta2}) {
    if (!(beta >= 0.0 && beta < 1.0)) {
      throw ValueError(fmt::format("{}: betas ({}, {}) must be in [0, 1)", n,
                                   o_.beta1, o_.beta2));
    }
  }
  exp_avg_.resize(params_.size());
  exp_avg_sq_.resize(params_.size());
  param_steps_.assign(params_.size(), 0);
}

void Adam::update(size_t i, const Tensor& grad) {
  Tensor& p = *params_[i].tensor;
  if (!exp_avg_[i].defined()) {
    exp_avg_[i] = nn::persistent(zeros_like(p));
    exp_avg_sq_[i] = nn::persistent(zeros_like(p));
  }
  OptimParams u;
  u.lr = lr_;
  u.weight_decay = o_.weight_decay;
  u.beta1 = o_.beta1;
  u.beta2 = o_.beta2;
  u.eps = o_.eps;
  u.step = ++param_steps_[i];
  u.decoupled = decoupled_;
  adam_update(p, grad, exp_avg_[i], exp_avg_sq_[i], u);
}

void Adam::save(OptimizerState& state) const {
  state.config["beta1"] = o_.beta1;
  state.config["beta2"] = o_.beta2;
  state.config["eps"] = o_.eps;
  state.config["weight_decay"] = o_.weight_decay;
  json steps = json::object();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!exp_avg_[i].defined()) continue;
    steps[params_[i].name] = param_steps_[i];
    state.tensors["exp_avg." + params_[i].name] = exp_avg_[i];
    state.tensors["exp_avg_sq." + params_[i].name] = exp_avg_sq_[i];
  }
  state.config["param_steps"] = steps;
}

void Adam::load(const OptimizerState& state) {
  const json steps = state.config.value("param_steps", json::object());
  if (!steps.is_object()) {
    throw ValueError(name() + " load_state_dict: param_steps is not an object");
  }
  std::vector<Tensor> m(params_.size()), v(params_.size());
  std::vector<int64_t> t(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& pn = params_[i].name;
    auto it = steps.find(pn);
    if (it == steps.end()) continue;  // Not stepped yet.
    if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
      throw ValueError(
          fmt::format("{} load_state_dict: step count of \"{}\" is {}", name(),
                      pn, it->dump()));
    }
    t[i] = it->get<int64_t>();
    const Tensor& p = *params_[i].tensor;
    m[i] = state_tensor(state, "exp_avg." + pn, i, true)
               ->to(p.backend())
               .cast(p.dtype())
               .clone();
    v[i] = state_tensor(state, "exp_avg_sq." + pn, i, true)
               ->to(p.backend())
               .cast(p.dtype())
               .clone();
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    exp_avg_[i] = Tensor();
    exp_avg_sq_[i] = Tensor();
    if (m[i].defined()) {
      nn::set_value(exp_avg_[i], m[i]);
      nn::set_value(exp_avg_sq_[i], v[i]);
    }
    param_steps_[i] = t[i];
  }
}

// --- Gradient clipping -------------------------------------------------------

Tensor clip_grad_norm(std::vector<Tensor>& grads, double max_norm) {
  if (!(max_norm > 0.0)) {
    throw ValueError(
        fmt::format("clip_grad_norm: max_norm {} is not positive", max_norm));
  }
  // Sums in f64 when any gradient is f64, else in f32.
  DType acc = DType::f32;
  for (const Tensor& g : grads) {
    if (g.defined() && g.dtype() == DType::f64) acc = DType::f64;
  }
  Tensor total;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    Tensor s = sum(square(g.cast(acc)));
    total = total.defined() ? total + s : s;
  }
  if (!total.defined()) {
    throw ValueError("clip_grad_norm: no gradient given");
  }
  Tensor norm = sqrt(total);
  Tensor coef = minimum(max_norm / (norm + 1e-6), 1.0);
  for (Tensor& g : grads) {
    if (g.defined()) g = g * coef.cast(g.dtype());
  }
  return norm;
}

}  // namespace nascent::optim
