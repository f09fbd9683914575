// sgd_update and adam_update: one optimizer step written in place into the
// parameter and its state, and the default Backend::optim, which runs the
// same rules as element-wise ops (a backend may fuse them into one pass).
//
// The rules are PyTorch's (torch.optim.SGD, Adam, AdamW):
//   SGD:  g = grad + wd p; buf = first ? g : momentum buf + (1 - dampening) g;
//         g = nesterov ? g + momentum buf : buf; p -= lr g
//   Adam: g = grad + wd p (AdamW instead: p *= 1 - lr wd);
//         m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//         p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
#include <cmath>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

void check_finite_non_negative(const char* op, const char* what, double v) {
  if (!(v >= 0.0) || !std::isfinite(v)) {
    throw ValueError(
        fmt::format("{}: {} = {} must be finite and >= 0", op, what, v));
  }
}

// Shapes, dtypes, layouts of an update's tensors; returns the gradient as a
// contiguous tensor.
Tensor check_update(const char* op, const Tensor& param, const Tensor& grad,
                    std::initializer_list<const Tensor*> state) {
  std::string what =
      "param " + param.to_string() + ", grad " + grad.to_string();
  for (const Tensor* s : state) what += ", state " + s->to_string();
  detail::check_dtype(is_floating(param.dtype()), op, param,
                      "a floating dtype");
  auto same = [&](const Tensor& t) {
    if (t.shape() != param.shape()) {
      throw ShapeError(fmt::format("{}: shapes differ ({})", op, what));
    }
    if (t.dtype() != param.dtype()) {
      throw DTypeError(fmt::format("{}: dtypes differ ({})", op, what));
    }
  };
  same(grad);
  for (const Tensor* s : state) {
    same(*s);
    if (!s->is_contiguous()) {
      throw ValueError(
          fmt::format("{}: the state must be contiguous ({})", op, what));
    }
    if (s->data() == param.data()) {
      throw ValueError(fmt::format(
          "{}: the state shares storage with the parameter ({})", op, what));
    }
  }
  if (!param.is_contiguous()) {
    throw ValueError(
        fmt::format("{}: the parameter must be contiguous ({})", op, what));
  }
  return grad.contiguous();
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad,
                const Tensor* momentum_buffer, const OptimParams& p) {
  const char* op = "sgd_update";
  Backend& backend =
      detail::common_backend(op, {&param, &grad, momentum_buffer});
  Tensor g = momentum_buffer ? check_update(op, param, grad, {momentum_buffer})
                             : check_update(op, param, grad, {});
  check_finite_non_negative(op, "lr", p.lr);
  check_finite_non_negative(op, "weight_decay", p.weight_decay);
  check_finite_non_negative(op, "momentum", p.momentum);
  check_finite_non_negative(op, "dampening", p.dampening);
  if (p.momentum != 0.0 && momentum_buffer == nullptr) {
    throw ValueError(
        fmt::format("{}: momentum {} needs a momentum buffer", op, p.momentum));
  }
  if (param.numel() == 0) return;
  Tensor pm = param;
  Tensor buf = momentum_buffer ? *momentum_buffer : Tensor();
  backend.optim(OptimOp::sgd_update, p, pm, g, momentum_buffer ? &buf : nullptr,
                nullptr);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const OptimParams& p) {
  const char* op = "adam_update";
  Backend& backend =
      detail::common_backend(op, {&param, &grad, &exp_avg, &exp_avg_sq});
  Tensor g = check_update(op, param, grad, {&exp_avg, &exp_avg_sq});
  if (exp_avg.data() == exp_avg_sq.data()) {
    throw ValueError(
        fmt::format("{}: exp_avg and exp_avg_sq share storage", op));
  }
  check_finite_non_negative(op, "lr", p.lr);
  check_finite_non_negative(op, "weight_decay", p.weight_decay);
  check_finite_non_negative(op, "eps", p.eps);
  if (!(p.beta1 >= 0.0 && p.beta1 < 1.0 && p.beta2 >= 0.0 && p.beta2 < 1.0)) {
    throw ValueError(fmt::format("{}: betas ({}, {}) must be in [0, 1)", op,
                                 p.beta1, p.beta2));
  }
  if (p.step < 1) {
    throw ValueError(fmt::format("{}: step {} must be >= 1", op, p.step));
  }
  if (param.numel() == 0) return;
  Tensor pm = param, m = exp_avg, v = exp_avg_sq;
  backend.optim(OptimOp::adam_update, p, pm, g, &m, &v);
}

void Backend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                    const Tensor& grad, Tensor* state0, Tensor* state1) {
  switch (op) {
    case OptimOp::sgd_update: {
      Tensor g = p.weight_decay != 0.0 ? grad + param * p.weight_decay : grad;
      if (state0 != nullptr && p.momentum != 0.0) {
        Tensor& buf = *state0;
        assign(buf,
               p.first_step ? g : buf * p.momentum + g * (1.0 - p.dampening));
        g = p.nesterov ? g + buf * p.momentum : buf;
      }
      assign(param, param - g * p.lr);
      return;
    }
    case OptimOp::adam_update: {
      Tensor g = grad;
      if (p.weight_decay != 0.0) {
        if (p.decoupled) {
          assign(param, param * (1.0 - p.lr * p.weight_decay));
        } else {
          g = g + param * p.weight_decay;
        }
      }
      Tensor& m = *state0;
      Tensor& v = *state1;
      assign(m, m * p.beta1 + g * (1.0 - p.beta1));
      assign(v, v * p.beta2 + square(g) * (1.0 - p.beta2));
      const double bias1 = 1.0 - std::pow(p.beta1, double(p.step));
      const double root2 = std::sqrt(1.0 - std::pow(p.beta2, double(p.step)));
      Tensor denom = sqrt(v) / root2 + p.eps;
      assign(param, param - (m / denom) * (p.lr / bias1));
      return;
    }
  }
}

}  // namespace nascent
