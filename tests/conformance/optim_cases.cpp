// Conformance cases for the optim family: one in-place update of random
// parameters and state against a float64 host computation of PyTorch's
// rule, for f32, f64 and the half types (which take the composed default),
// gradients in every layout, sizes around the SIMD width and large enough
// for the threaded path.
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr int64_t kSizes[] = {1, 7, 33, 100003};

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 1e-5;
    default:
      return 2e-2;  // Each composed op rounds to 8 or 11 bits.
  }
}

void expect_near(const Tensor& got, const std::vector<double>& want,
                 DType dtype, const std::string& label) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << label;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tolerance(dtype) * (1 + std::fabs(want[i])))
        << label << " element " << i;
  }
}

std::vector<OptimParams> sgd_variants() {
  std::vector<OptimParams> out;
  OptimParams plain;
  plain.lr = 0.1;
  out.push_back(plain);
  OptimParams momentum = plain;
  momentum.momentum = 0.9;
  momentum.dampening = 0.25;
  momentum.weight_decay = 0.01;
  out.push_back(momentum);
  OptimParams first = momentum;
  first.first_step = true;
  out.push_back(first);
  OptimParams nesterov = plain;
  nesterov.momentum = 0.8;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0.1;
  out.push_back(nesterov);
  // Each flag alone, so a backend that ties two of them together fails.
  OptimParams decay = plain;
  decay.weight_decay = 0.05;
  out.push_back(decay);
  OptimParams bare_momentum = plain;
  bare_momentum.momentum = 0.7;
  out.push_back(bare_momentum);
  OptimParams nesterov_first = bare_momentum;
  nesterov_first.nesterov = true;
  nesterov_first.first_step = true;
  out.push_back(nesterov_first);
  return out;
}

CONFORMANCE_CASE(sgd_update, "momentum, dampening, Nesterov, weight decay") {
  uint64_t seed = 1;
  for (DType dt : kDTypes) {
    for (int64_t n : kSizes) {
      for (const OptimParams& p : sgd_variants()) {
        for (Layout layout : {Layout::contiguous, Layout::transposed}) {
          const Shape shape = n > 7 ? Shape{n} : Shape{n, 2};
          Tensor param = random_tensor(shape, dt, backend, seed++);
          Tensor grad = random_tensor(shape, dt, backend, seed++, layout);
          Tensor buf = random_tensor(shape, dt, backend, seed++);
          std::vector<double> w = param.to_vector<double>(),
                              g = grad.to_vector<double>(),
                              b = buf.to_vector<double>();
          const bool momentum = p.momentum != 0.0;
          for (size_t i = 0; i < w.size(); ++i) {
            double gi = g[i] + p.weight_decay * w[i];
            if (momentum) {
              b[i] = p.first_step ? gi
                                  : p.momentum * b[i] + (1 - p.dampening) * gi;
              gi = p.nesterov ? gi + p.momentum * b[i] : b[i];
            }
            w[i] -= p.lr * gi;
          }
          sgd_update(param, grad, momentum ? &buf : nullptr, p);
          std::string label = fmt::format(
              "{} n {} decay {} momentum {} first {} Nesterov {}", name(dt), n,
              p.weight_decay, p.momentum, p.first_step, p.nesterov);
          expect_near(param, w, dt, label + " param");
          if (momentum) expect_near(buf, b, dt, label + " buffer");
        }
      }
    }
  }
}

CONFORMANCE_CASE(adam_update,
                 "Adam and AdamW, with and without decay, bias correction") {
  uint64_t seed = 100;
  for (DType dt : kDTypes) {
    for (int64_t n : kSizes) {
      for (double decay : {0.0, 0.05}) {
        for (bool decoupled : {false, true}) {
          for (int64_t step : {int64_t(1), int64_t(7)}) {
            OptimParams p;
            p.lr = 0.01;
            p.beta1 = 0.8;
            p.beta2 = 0.99;
            p.eps = 1e-6;
            p.weight_decay = decay;
            p.decoupled = decoupled;
            p.step = step;
            Tensor param = random_tensor({n}, dt, backend, seed++);
            Tensor grad =
                random_tensor({n}, dt, backend, seed++, Layout::sliced);
            Tensor m = random_tensor({n}, dt, backend, seed++);
            Tensor v = random_tensor({n}, dt, backend, seed++,
                                     Layout::contiguous, 0.0, 2.0);
            std::vector<double> w = param.to_vector<double>(),
                                g = grad.to_vector<double>(),
                                mh = m.to_vector<double>(),
                                vh = v.to_vector<double>();
            const double bias1 = 1 - std::pow(p.beta1, double(step));
            const double root2 = std::sqrt(1 - std::pow(p.beta2, double(step)));
            for (size_t i = 0; i < w.size(); ++i) {
              double gi = g[i];
              if (decoupled) {
                w[i] *= 1 - p.lr * p.weight_decay;
              } else {
                gi += p.weight_decay * w[i];
              }
              mh[i] = p.beta1 * mh[i] + (1 - p.beta1) * gi;
              vh[i] = p.beta2 * vh[i] + (1 - p.beta2) * gi * gi;
              w[i] -= p.lr / bias1 * mh[i] / (std::sqrt(vh[i]) / root2 + p.eps);
            }
            adam_update(param, grad, m, v, p);
            std::string label =
                fmt::format("{} n {} decay {} decoupled {} step {}", name(dt),
                            n, decay, decoupled, step);
            expect_near(param, w, dt, label + " param");
            expect_near(m, mh, dt, label + " exp_avg");
            expect_near(v, vh, dt, label + " exp_avg_sq");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nascent::conformance
