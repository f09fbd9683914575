// Optimizers against float64 host implementations of PyTorch's update rules
// over several steps of random gradients; state_dict round trips that
// continue bit for bit; schedules; gradient clipping; errors.
#include "nascent/optim/optimizer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "io/test_files.h"
#include "nascent/nascent.h"
#include "nascent/optim/schedule.h"

namespace nascent::optim {
namespace {

using nascent::testing::expect_error;

// Two parameters (a matrix and a vector) and their host mirrors.
struct Params {
  Tensor w, b;
  std::vector<nn::NamedTensor> named() {
    return {{"layer.weight", &w}, {"layer.bias", &b}};
  }
};

Params make_params(Backend& cpu, DType dt) {
  return {conformance::random_tensor({5, 7}, dt, cpu, 1),
          conformance::random_tensor({7}, dt, cpu, 2)};
}

std::vector<Tensor> grads_at(Backend& cpu, int step, DType dt) {
  return {conformance::random_tensor({5, 7}, dt, cpu, 100 + uint64_t(step)),
          conformance::random_tensor({7}, dt, cpu, 200 + uint64_t(step))};
}

// One parameter's host state under PyTorch's rules.
struct RefParam {
  std::vector<double> p, buf, m, v;
  int64_t t = 0;
};

void ref_sgd(RefParam& r, const std::vector<double>& grad,
             const SGDOptions& o) {
  std::vector<double> g = grad;
  for (size_t i = 0; i < g.size(); ++i) g[i] += o.weight_decay * r.p[i];
  if (o.momentum != 0) {
    if (r.buf.empty()) {
      r.buf = g;
    } else {
      for (size_t i = 0; i < g.size(); ++i) {
        r.buf[i] = o.momentum * r.buf[i] + (1 - o.dampening) * g[i];
      }
    }
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = o.nesterov ? g[i] + o.momentum * r.buf[i] : r.buf[i];
    }
  }
  for (size_t i = 0; i < g.size(); ++i) r.p[i] -= o.lr * g[i];
}

void ref_adam(RefParam& r, const std::vector<double>& grad,
              const AdamOptions& o, bool decoupled) {
  if (r.m.empty()) r.m = r.v = std::vector<double>(grad.size(), 0.0);
  ++r.t;
  for (size_t i = 0; i < grad.size(); ++i) {
    double g = grad[i];
    if (decoupled) {
      r.p[i] *= 1 - o.lr * o.weight_decay;
    } else {
      g += o.weight_decay * r.p[i];
    }
    r.m[i] = o.beta1 * r.m[i] + (1 - o.beta1) * g;
    r.v[i] = o.beta2 * r.v[i] + (1 - o.beta2) * g * g;
    double b1 = 1 - std::pow(o.beta1, double(r.t));
    double b2 = 1 - std::pow(o.beta2, double(r.t));
    r.p[i] -= o.lr / b1 * r.m[i] / (std::sqrt(r.v[i]) / std::sqrt(b2) + o.eps);
  }
}

void expect_params_near(const Params& got, const RefParam ref[2], double tol,
                        const std::string& label) {
  const Tensor* ts[2] = {&got.w, &got.b};
  for (int k = 0; k < 2; ++k) {
    std::vector<double> g = ts[k]->to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) {
      ASSERT_NEAR(g[i], ref[k].p[i], tol * (1 + std::fabs(ref[k].p[i])))
          << label << " parameter " << k << " element " << i;
    }
  }
}

class Optimizers : public ::testing::Test {
 protected:
  cpu::Backend cpu;

  // Runs `steps` steps with a gap: step 2 has no gradient for the bias.
  template <class Opt, class Options, class RefStep>
  void check(Options o, RefStep ref_step, const std::string& label) {
    for (DType dt : {DType::f64, DType::f32}) {
      Params ps = make_params(cpu, dt);
      RefParam ref[2];
      ref[0].p = ps.w.to_vector<double>();
      ref[1].p = ps.b.to_vector<double>();
      Opt opt(ps.named(), o);
      for (int step = 0; step < 6; ++step) {
        std::vector<Tensor> g = grads_at(cpu, step, dt);
        if (step == 2) g[1] = Tensor();
        opt.step(g);
        for (int k = 0; k < 2; ++k) {
          if (g[size_t(k)].defined()) {
            ref_step(ref[k], g[size_t(k)].to_vector<double>());
          }
        }
      }
      EXPECT_EQ(opt.step_count(), 6);
      expect_params_near(ps, ref, dt == DType::f64 ? 1e-12 : 2e-5,
                         label + " " + name(dt));
      EXPECT_TRUE(cpu.is_persistent(ps.w));
    }
  }
};

TEST_F(Optimizers, SgdVariantsFollowPyTorch) {
  std::vector<SGDOptions> variants = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01},
      {.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true}};
  for (size_t v = 0; v < variants.size(); ++v) {
    SGDOptions o = variants[v];
    check<SGD>(
        o, [&](RefParam& r, const std::vector<double>& g) { ref_sgd(r, g, o); },
        "sgd variant " + std::to_string(v));
  }
}

TEST_F(Optimizers, AdamAndAdamWFollowPyTorch) {
  AdamOptions o{.lr = 0.01,
                .beta1 = 0.8,
                .beta2 = 0.99,
                .eps = 1e-6,
                .weight_decay = 0.05};
  check<Adam>(
      o,
      [&](RefParam& r, const std::vector<double>& g) {
        ref_adam(r, g, o, false);
      },
      "adam");
  check<AdamW>(
      o,
      [&](RefParam& r, const std::vector<double>& g) {
        ref_adam(r, g, o, true);
      },
      "adamw");
  Params ps = make_params(cpu, DType::f32);
  EXPECT_EQ(Adam(ps.named(), {}).name(), "Adam");
  EXPECT_EQ(AdamW(ps.named(), {}).name(), "AdamW");
}

// N steps, save, load into a fresh optimizer over copies of the parameters,
// M more steps on both: identical bits.
template <class Opt, class Options>
void check_resume(Backend& cpu, Options o) {
  Params a = make_params(cpu, DType::f32);
  Opt opt_a(a.named(), o);
  for (int s = 0; s < 3; ++s) opt_a.step(grads_at(cpu, s, DType::f32));
  OptimizerState state = opt_a.state_dict();
  Params b{a.w.clone(), a.b.clone()};
  Opt opt_b(b.named(), o);
  opt_b.load_state_dict(state);
  EXPECT_EQ(opt_b.step_count(), 3);
  for (int s = 3; s < 6; ++s) {
    opt_a.step(grads_at(cpu, s, DType::f32));
    opt_b.step(grads_at(cpu, s, DType::f32));
  }
  EXPECT_EQ(a.w.to_vector<float>(), b.w.to_vector<float>()) << opt_a.name();
  EXPECT_EQ(a.b.to_vector<float>(), b.b.to_vector<float>()) << opt_a.name();
}

TEST_F(Optimizers, StateDictResumesBitForBit) {
  check_resume<SGD>(cpu,
                    SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
  check_resume<Adam>(cpu, AdamOptions{.lr = 0.01});
  check_resume<AdamW>(cpu, AdamOptions{.lr = 0.01, .weight_decay = 0.1});

  Params a = make_params(cpu, DType::f32);
  Adam adam(a.named(), {});
  adam.step(grads_at(cpu, 0, DType::f32));
  OptimizerState s = adam.state_dict();
  EXPECT_EQ(s.config["optimizer"], "Adam");
  EXPECT_EQ(s.config["param_steps"]["layer.bias"], 1);
  EXPECT_EQ(s.tensors.size(), 4u);
  EXPECT_TRUE(s.tensors.count("exp_avg_sq.layer.weight"));
}

TEST_F(Optimizers, LoadStateDictRejectsForeignState) {
  Params a = make_params(cpu, DType::f32);
  SGD sgd(a.named(), {.lr = 0.1, .momentum = 0.9});
  sgd.step(grads_at(cpu, 0, DType::f32));
  Adam adam(a.named(), {});
  expect_error<ValueError>([&] { adam.load_state_dict(sgd.state_dict()); },
                           {"Adam load_state_dict", "optimizer \"SGD\""});
  Tensor other = zeros({3}, cpu);
  SGD sgd2({{"other", &other}}, {.lr = 0.1, .momentum = 0.9});
  expect_error<ValueError>(
      [&] { sgd2.load_state_dict(sgd.state_dict()); },
      {"for parameters [\"layer.weight\",\"layer.bias\"]", "has [\"other\"]"});
  adam.step(grads_at(cpu, 0, DType::f32));
  OptimizerState s = adam.state_dict();
  s.tensors["exp_avg.layer.bias"] = zeros({8}, cpu);
  Adam fresh(a.named(), {});
  expect_error<ShapeError>([&] { fresh.load_state_dict(s); },
                           {"\"exp_avg.layer.bias\" is f32[8]", "f32[7]"});
  EXPECT_EQ(fresh.state_dict().tensors.size(), 0u);  // Unchanged.
  s = adam.state_dict();
  s.tensors.erase("exp_avg_sq.layer.weight");
  expect_error<ValueError>([&] { fresh.load_state_dict(s); },
                           {"\"exp_avg_sq.layer.weight\" is missing"});
  s = adam.state_dict();
  s.config["lr"] = "fast";
  expect_error<ValueError>([&] { fresh.load_state_dict(s); },
                           {"\"lr\" is missing or not a number"});
}

TEST_F(Optimizers, ArgumentErrors) {
  Params a = make_params(cpu, DType::f32);
  expect_error<ValueError>([&] { SGD(a.named(), {.lr = -1}); }, {"lr = -1"});
  expect_error<ValueError>(
      [&] { SGD(a.named(), {.lr = 0.1, .nesterov = true}); },
      {"Nesterov momentum needs momentum > 0"});
  expect_error<ValueError>([&] { Adam(a.named(), {.beta1 = 1.0}); },
                           {"betas (1, 0.999)"});
  Tensor ints = zeros({2}, cpu, DType::i64);
  expect_error<DTypeError>(
      [&] {
        SGD({{"i", &ints}}, {});
      },
      {"\"i\" is i64[2], not floating"});
  expect_error<ValueError>(
      [&] {
        SGD({{"x", &a.w}, {"x", &a.b}}, {});
      },
      {"\"x\" appears twice"});
  SGD sgd(a.named(), {});
  expect_error<ValueError>([&] { sgd.step({a.w}); },
                           {"SGD", "1 gradients for 2 parameters"});
  expect_error<ShapeError>(
      [&] {
        sgd.step({a.b, a.b});
      },
      {"gradient f32[7]", "\"layer.weight\" f32[5, 7]"});
}

TEST_F(Optimizers, ClipGradNormScalesToTheLimit) {
  std::vector<Tensor> g = {from_vector<float>({3, 0}, cpu),
                           from_vector<float>({4}, cpu), Tensor()};
  Tensor norm = clip_grad_norm(g, 1.0);
  EXPECT_FLOAT_EQ(norm.item<float>(), 5.0f);
  EXPECT_NEAR(g[0].to_vector<float>()[0], 0.6, 1e-6);
  EXPECT_NEAR(g[1].to_vector<float>()[0], 0.8, 1e-6);
  EXPECT_FALSE(g[2].defined());
  std::vector<Tensor> small = {from_vector<double>({0.3, 0.4}, cpu)};
  EXPECT_DOUBLE_EQ(clip_grad_norm(small, 1.0).item<double>(), 0.5);
  EXPECT_EQ(small[0].to_vector<double>(), (std::vector<double>{0.3, 0.4}));
  expect_error<ValueError>([&] { clip_grad_norm(small, 0.0); },
                           {"clip_grad_norm", "max_norm 0"});
  std::vector<Tensor> none = {Tensor()};
  expect_error<ValueError>([&] { clip_grad_norm(none, 1.0); }, {"no gradient"});
}

TEST(Schedules, FollowTheirFormulas) {
  StepLR step(0.1, 3, 0.5);
  EXPECT_DOUBLE_EQ(step.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(step.lr(2), 0.1);
  EXPECT_DOUBLE_EQ(step.lr(3), 0.05);
  EXPECT_DOUBLE_EQ(step.lr(7), 0.025);
  CosineLR cos(1.0, 100, 0.1);
  EXPECT_DOUBLE_EQ(cos.lr(0), 1.0);
  EXPECT_NEAR(cos.lr(50), 0.55, 1e-15);
  EXPECT_NEAR(cos.lr(25),
              0.1 + 0.9 * 0.5 * (1 + std::cos(3.14159265358979323846 / 4)),
              1e-15);
  EXPECT_DOUBLE_EQ(cos.lr(100), 0.1);
  EXPECT_DOUBLE_EQ(cos.lr(1000), 0.1);
  WarmupLR warm(std::make_shared<CosineLR>(1.0, 100), 10, 0.1);
  EXPECT_DOUBLE_EQ(warm.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(warm.lr(5), 0.55);
  EXPECT_DOUBLE_EQ(warm.lr(10), 1.0);
  EXPECT_NEAR(warm.lr(60), 0.5, 1e-15);
  EXPECT_DOUBLE_EQ(ConstantLR(0.3).lr(12345), 0.3);
  expect_error<ValueError>([&] { step.lr(-1); }, {"StepLR", "step -1"});
  expect_error<ValueError>([&] { CosineLR(1.0, 0); }, {"total_steps 0"});
  expect_error<ValueError>([&] { StepLR(0.1, 0); }, {"step_size 0"});
  expect_error<ValueError>([&] { WarmupLR(nullptr, 5); }, {"WarmupLR"});
  expect_error<ValueError>([&] { ConstantLR(-0.1); }, {"lr -0.1"});
}

}  // namespace
}  // namespace nascent::optim
