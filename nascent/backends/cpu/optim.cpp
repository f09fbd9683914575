// sgd_update and adam_update on the CPU: one pass over contiguous arrays,
// reading the parameter, its gradient and state once and writing them in
// place. The update is bound by memory traffic, not arithmetic (after the
// backward pass the parameters and state are out of cache), so plain loops
// that the compiler vectorises do as well as hand-written SIMD; fusing the
// five to seven element-wise passes of the composed rule into one is what
// matters. f16 and bf16 take the composed default (Backend::optim).
#include <cmath>

#include <hwy/base.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/strided.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

// One chunk of the update. The flags are template arguments and the
// constants locals, and the arrays are declared unaliased: otherwise the
// compiler must assume a store into param could change a constant or the
// next gradient, and it keeps the loop scalar with every value reloaded
// (that ran at about 10 cycles per element).
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, class T>
void sgd_chunk(T lr, T wd, T m, T keep, T* HWY_RESTRICT param,
               const T* HWY_RESTRICT grad, T* HWY_RESTRICT buf, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T g = grad[i];
    if constexpr (kDecay) g += wd * param[i];
    if constexpr (kMomentum) {
      T b;
      if constexpr (kFirst) {
        b = g;
      } else {
        b = m * buf[i] + keep * g;
      }
      buf[i] = b;
      if constexpr (kNesterov) {
        g = g + m * b;
      } else {
        g = b;
      }
    }
    param[i] -= lr * g;
  }
}

template <class T>
void sgd(const OptimParams& p, T* param, const T* grad, T* buf, int64_t n) {
  const T lr = T(p.lr), wd = T(p.weight_decay), m = T(p.momentum),
          keep = T(1.0 - p.dampening);
  using Chunk = void (*)(T, T, T, T, T*, const T*, T*, int64_t);
  // Index: decay, momentum, first step, Nesterov (the last two only with
  // momentum).
  static constexpr Chunk kChunks[] = {sgd_chunk<false, false, false, false, T>,
                                      sgd_chunk<true, false, false, false, T>,
                                      sgd_chunk<false, true, false, false, T>,
                                      sgd_chunk<true, true, false, false, T>,
                                      sgd_chunk<false, true, true, false, T>,
                                      sgd_chunk<true, true, true, false, T>,
                                      sgd_chunk<false, true, false, true, T>,
                                      sgd_chunk<true, true, false, true, T>,
                                      sgd_chunk<false, true, true, true, T>,
                                      sgd_chunk<true, true, true, true, T>};
  const bool momentum = buf != nullptr && p.momentum != 0.0;
  const size_t index =
      size_t(p.weight_decay != 0.0) +
      (momentum ? 2 + 2 * size_t(p.first_step) + 4 * size_t(p.nesterov) : 0);
  const Chunk chunk = kChunks[index];
  parallel_for(n, kElementwiseGrain, [=](int64_t begin, int64_t end) {
    chunk(lr, wd, m, keep, param + begin, grad + begin,
          momentum ? buf + begin : nullptr, end - begin);
  });
}

template <bool kDecay, bool kDecoupled, class T>
void adam_chunk(T b1, T b2, T eps, T wd, T shrink, T step_size, T root2,
                T* HWY_RESTRICT param, const T* HWY_RESTRICT grad,
                T* HWY_RESTRICT exp_avg, T* HWY_RESTRICT exp_avg_sq,
                int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T g = grad[i];
    T w = param[i];
    if constexpr (kDecay) {
      if constexpr (kDecoupled) {
        w *= shrink;
      } else {
        g += wd * w;
      }
    }
    const T m = b1 * exp_avg[i] + (T(1) - b1) * g;
    const T v = b2 * exp_avg_sq[i] + (T(1) - b2) * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = w - step_size * m / (std::sqrt(v) / root2 + eps);
  }
}

template <class T>
void adam(const OptimParams& p, T* param, const T* grad, T* exp_avg,
          T* exp_avg_sq, int64_t n) {
  const T b1 = T(p.beta1), b2 = T(p.beta2), eps = T(p.eps),
          wd = T(p.weight_decay);
  const T shrink = T(1.0 - p.lr * p.weight_decay);
  const T step_size = T(p.lr / (1.0 - std::pow(p.beta1, double(p.step))));
  const T root2 = T(std::sqrt(1.0 - std::pow(p.beta2, double(p.step))));
  using Chunk = void (*)(T, T, T, T, T, T, T, T*, const T*, T*, T*, int64_t);
  const Chunk chunk = p.weight_decay == 0.0 ? adam_chunk<false, false, T>
                      : p.decoupled         ? adam_chunk<true, true, T>
                                            : adam_chunk<true, false, T>;
  parallel_for(n, kElementwiseGrain, [=](int64_t begin, int64_t end) {
    chunk(b1, b2, eps, wd, shrink, step_size, root2, param + begin,
          grad + begin, exp_avg + begin, exp_avg_sq + begin, end - begin);
  });
}

template <class T>
void run(OptimOp op, const OptimParams& p, Tensor& param, const Tensor& grad,
         Tensor* state0, Tensor* state1) {
  T* w = data_ptr<T>(param);
  const T* g = data_ptr<T>(grad);
  switch (op) {
    case OptimOp::sgd_update:
      sgd(p, w, g, state0 ? data_ptr<T>(*state0) : nullptr, param.numel());
      return;
    case OptimOp::adam_update:
      adam(p, w, g, data_ptr<T>(*state0), data_ptr<T>(*state1), param.numel());
      return;
  }
}

}  // namespace

void Backend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                    const Tensor& grad, Tensor* state0, Tensor* state1) {
  switch (param.dtype()) {
    case DType::f32:
      return run<float>(op, p, param, grad, state0, state1);
    case DType::f64:
      return run<double>(op, p, param, grad, state0, state1);
    default:
      return nascent::Backend::optim(op, p, param, grad, state0, state1);
  }
}

}  // namespace nascent::cpu
