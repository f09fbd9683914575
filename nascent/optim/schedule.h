// Learning-rate schedules: pure functions of the step number, so a resumed
// run needs nothing but its step count to continue on the same curve.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace nascent::optim {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double lr(int64_t step) const = 0;
  virtual std::string describe() const = 0;
};

class ConstantLR final : public Schedule {
 public:
  explicit ConstantLR(double lr);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  double lr_;
};

// lr * gamma^(step / step_size) (integer division).
class StepLR final : public Schedule {
 public:
  StepLR(double lr, int64_t step_size, double gamma = 0.1);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  double lr_;
  int64_t step_size_;
  double gamma_;
};

// Cosine from lr down to min_lr over total_steps, then min_lr.
class CosineLR final : public Schedule {
 public:
  CosineLR(double lr, int64_t total_steps, double min_lr = 0.0);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  double lr_;
  int64_t total_;
  double min_lr_;
};

// Linear from start_factor * after(0) up to after(0) over warmup_steps, then
// `after` shifted by the warm-up (its step 0 is the first after warm-up).
class WarmupLR final : public Schedule {
 public:
  WarmupLR(std::shared_ptr<const Schedule> after, int64_t warmup_steps,
           double start_factor = 0.0);
  double lr(int64_t step) const override;
  std::string describe() const override;

 private:
  std::shared_ptr<const Schedule> after_;
  int64_t warmup_;
  double start_;
};

}  // namespace nascent::optim
