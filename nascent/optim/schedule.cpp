#include "nascent/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::optim {

namespace {

void check_lr(const char* schedule, double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) {
    throw ValueError(
        fmt::format("{}: lr {} must be finite and >= 0", schedule, lr));
  }
}

void check_step(const char* schedule, int64_t step) {
  if (step < 0) {
    throw ValueError(fmt::format("{}: step {} is negative", schedule, step));
  }
}

}  // namespace

ConstantLR::ConstantLR(double lr) : lr_(lr) {
  check_lr("ConstantLR", lr);
}
double ConstantLR::lr(int64_t step) const {
  check_step("ConstantLR", step);
  return lr_;
}
std::string ConstantLR::describe() const {
  return fmt::format("constant {}", lr_);
}

StepLR::StepLR(double lr, int64_t step_size, double gamma)
    : lr_(lr), step_size_(step_size), gamma_(gamma) {
  check_lr("StepLR", lr);
  if (step_size <= 0 || !(gamma >= 0.0)) {
    throw ValueError(
        fmt::format("StepLR: step_size {} must be positive and gamma {} >= 0",
                    step_size, gamma));
  }
}
double StepLR::lr(int64_t step) const {
  check_step("StepLR", step);
  return lr_ * std::pow(gamma_, double(step / step_size_));
}
std::string StepLR::describe() const {
  return fmt::format("step {} x{} every {} steps", lr_, gamma_, step_size_);
}

CosineLR::CosineLR(double lr, int64_t total_steps, double min_lr)
    : lr_(lr), total_(total_steps), min_lr_(min_lr) {
  check_lr("CosineLR", lr);
  check_lr("CosineLR", min_lr);
  if (total_steps <= 0) {
    throw ValueError(
        fmt::format("CosineLR: total_steps {} is not positive", total_steps));
  }
}
double CosineLR::lr(int64_t step) const {
  check_step("CosineLR", step);
  const double pi = 3.14159265358979323846;
  double t = double(std::min(step, total_)) / double(total_);
  return min_lr_ + (lr_ - min_lr_) * 0.5 * (1.0 + std::cos(pi * t));
}
std::string CosineLR::describe() const {
  return fmt::format("cosine {} -> {} over {} steps", lr_, min_lr_, total_);
}

WarmupLR::WarmupLR(std::shared_ptr<const Schedule> after, int64_t warmup_steps,
                   double start_factor)
    : after_(std::move(after)), warmup_(warmup_steps), start_(start_factor) {
  if (!after_) throw ValueError("WarmupLR: no schedule to warm up into");
  if (warmup_steps < 0 || !(start_factor >= 0.0 && start_factor <= 1.0)) {
    throw ValueError(fmt::format(
        "WarmupLR: warmup_steps {} must be >= 0 and start_factor {} in [0, 1]",
        warmup_steps, start_factor));
  }
}
double WarmupLR::lr(int64_t step) const {
  check_step("WarmupLR", step);
  if (step >= warmup_) return after_->lr(step - warmup_);
  double f = start_ + (1.0 - start_) * double(step) / double(warmup_);
  return after_->lr(0) * f;
}
std::string WarmupLR::describe() const {
  return fmt::format("linear warm-up over {} steps, then {}", warmup_,
                     after_->describe());
}

}  // namespace nascent::optim
