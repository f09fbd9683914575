// Layers against float64 references computed here: the wiring of weights,
// biases and options into the ops (which the conformance suite checks on
// their own), PyTorch's default initialisation ranges, and the layers'
// own logic (batch norm statistics, dropout scaling and its random stream).
#include "nascent/nn/layers.h"

#include <cmath>

#include <gtest/gtest.h>

#include "conformance/conv_reference.h"
#include "conformance/reference.h"
#include "io/test_files.h"
#include "nascent/nascent.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/init.h"
#include "nascent/nn/norm.h"

namespace nascent::nn {
namespace {

using conformance::HostTensor;
using conformance::to_host;
using nascent::testing::expect_error;

void expect_near_all(const Tensor& got, const std::vector<double>& want,
                     double tol, const std::string& label) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << label;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * (1.0 + std::fabs(want[i])))
        << label << " element " << i;
  }
}

class Layers : public ::testing::Test {
 protected:
  cpu::Backend cpu;
  Generator gen{11};
};

TEST_F(Layers, LinearIsXTimesWeightTransposedPlusBias) {
  for (DType dt : {DType::f64, DType::f32}) {
    Linear fc(7, 5, cpu, gen, true, dt);
    // 2-D, 3-D and a transposed (strided) input.
    for (Tensor x :
         {conformance::random_tensor({4, 7}, dt, cpu, 1),
          conformance::random_tensor({2, 3, 7}, dt, cpu, 2),
          conformance::random_tensor({4, 7}, dt, cpu, 3,
                                     conformance::Layout::transposed)}) {
      HostTensor hx = to_host(x), w = to_host(fc.weight()),
                 b = to_host(*fc.bias());
      int64_t rows = x.numel() / 7;
      std::vector<double> want(size_t(rows * 5));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < 5; ++o) {
          double acc = b.v[size_t(o)];
          for (int64_t i = 0; i < 7; ++i) {
            acc += hx.v[size_t(r * 7 + i)] * w.v[size_t(o * 7 + i)];
          }
          want[size_t(r * 5 + o)] = acc;
        }
      }
      Tensor y = fc(x);
      Shape shape = x.shape();
      shape.back() = 5;
      EXPECT_EQ(y.shape(), shape);
      expect_near_all(y, want, dt == DType::f64 ? 1e-12 : 1e-5, "linear");
    }
  }
  Linear no_bias(3, 2, cpu, gen, false);
  EXPECT_EQ(no_bias.bias(), nullptr);
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);
  EXPECT_EQ(no_bias.describe(), "Linear(3, 2, bias=false)");
  expect_error<ShapeError>([&] { no_bias(zeros({2, 4}, cpu)); }, {"matmul"});
  expect_error<ValueError>([&] { Linear(0, 2, cpu, gen); },
                           {"Linear", "in_features"});
}

TEST_F(Layers, DefaultInitIsUniformInOneOverSqrtFanIn) {
  Linear fc(200, 300, cpu, gen);
  std::vector<double> w = fc.weight().to_vector<double>();
  double bound = 1.0 / std::sqrt(200.0), mean = 0, sq = 0, top = 0;
  for (double v : w) {
    mean += v;
    sq += v * v;
    top = std::max(top, std::fabs(v));
  }
  mean /= double(w.size());
  sq /= double(w.size());
  EXPECT_LE(top, bound);
  EXPECT_GT(top, 0.99 * bound);
  EXPECT_NEAR(mean, 0.0, 0.01 * bound);
  EXPECT_NEAR(sq, bound * bound / 3.0, 0.02 * bound * bound);  // Uniform var.
  for (double v : fc.bias()->to_vector<double>())
    EXPECT_LE(std::fabs(v), bound);

  Conv2d conv(6, 4, {.kernel = 5}, cpu, gen);
  double cbound = 1.0 / std::sqrt(6.0 * 25.0);
  for (double v : conv.weight().to_vector<double>()) {
    EXPECT_LE(std::fabs(v), cbound);
  }
  // The same seed gives the same model.
  Generator g1(3), g2(3);
  EXPECT_EQ(Linear(4, 4, cpu, g1).weight().to_vector<float>(),
            Linear(4, 4, cpu, g2).weight().to_vector<float>());
}

TEST_F(Layers, InitialisersHaveTheirStatistics) {
  auto stats = [](const Tensor& t) {
    std::vector<double> v = t.to_vector<double>();
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= double(v.size());
    for (double x : v) s += (x - m) * (x - m);
    return std::pair<double, double>{m, std::sqrt(s / double(v.size()))};
  };
  Shape shape{256, 128, 3, 3};  // fan_in 1152, fan_out 2304.
  EXPECT_EQ(init::fans(shape), (std::pair<int64_t, int64_t>{1152, 2304}));
  auto [m1, s1] = stats(init::kaiming_normal(shape, cpu, gen));
  EXPECT_NEAR(m1, 0.0, 1e-3);
  EXPECT_NEAR(s1, std::sqrt(2.0 / 1152.0), 0.01 * s1);
  auto [m2, s2] = stats(
      init::kaiming_uniform(shape, cpu, gen, 0.0, init::FanMode::fan_out));
  EXPECT_NEAR(s2, std::sqrt(2.0 / 2304.0), 0.01 * s2);
  EXPECT_NEAR(m2, 0.0, 1e-3);
  auto [m3, s3] = stats(init::xavier_uniform(shape, cpu, gen, 2.0));
  EXPECT_NEAR(s3, 2.0 * std::sqrt(2.0 / (1152.0 + 2304.0)), 0.01 * s3);
  auto [m4, s4] = stats(init::xavier_normal(shape, cpu, gen));
  EXPECT_NEAR(s4, std::sqrt(2.0 / (1152.0 + 2304.0)), 0.01 * s4);
  EXPECT_NEAR(m3 + m4, 0.0, 2e-3);
  EXPECT_NEAR(init::leaky_relu_gain(std::sqrt(5.0)), std::sqrt(1.0 / 3.0),
              1e-15);
  expect_error<ValueError>([&] { init::fans({}); }, {"0-d"});
  expect_error<ValueError>(
      [&] {
        init::kaiming_normal({3, 0}, cpu, gen);
      },
      {"kaiming_normal", "[3, 0]"});
}

TEST_F(Layers, Conv2dAndPoolsPassTheirOptions) {
  Conv2dOptions o{.kernel = 3, .stride = 2, .padding = 1, .groups = 2};
  Conv2d conv(4, 6, o, cpu, gen, DType::f64);
  Tensor x = conformance::random_tensor({2, 4, 9, 8}, DType::f64, cpu, 4);
  HostTensor hb = to_host(*conv.bias());
  conformance::RefResult want = conformance::ref_conv2d(
      to_host(x), to_host(conv.weight()), &hb, conv.params());
  conformance::expect_close_sums(conv(x), want, "conv2d");
  EXPECT_EQ(conv.weight().shape(), (Shape{6, 2, 3, 3}));
  EXPECT_EQ(conv.describe(),
            "Conv2d(4, 6, kernel=3, stride=2, padding=1, groups=2)");
  expect_error<ValueError>([&] { Conv2d(3, 4, {.groups = 2}, cpu, gen); },
                           {"Conv2d", "not divisible by groups 2"});

  MaxPool2d mp(3, 2, 1);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 3;
  p.stride[0] = p.stride[1] = 2;
  p.padding[0] = p.padding[1] = 1;
  conformance::expect_close(
      mp(x), conformance::ref_max_pool2d(to_host(x), p).value, "max pool");
  AvgPool2d ap(2);  // Stride defaults to the kernel.
  Pool2dParams q;
  conformance::expect_close(ap(x), conformance::ref_avg_pool2d(to_host(x), q),
                            "avg pool");
  EXPECT_EQ(ap(x).shape(), (Shape{2, 4, 4, 4}));
  expect_error<ValueError>([&] { MaxPool2d(0); }, {"MaxPool2d", "kernel"});
}

TEST_F(Layers, FlattenSequentialAndActivations) {
  Tensor x = conformance::random_tensor({2, 3, 4, 5}, DType::f32, cpu, 5);
  EXPECT_EQ(Flatten()(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(Flatten(0, 2)(x).shape(), (Shape{24, 5}));
  Sequential s;
  s.add(std::make_shared<Flatten>()).add(std::make_shared<ReLU>());
  s.add(std::make_shared<Linear>(60, 3, cpu, gen));
  Tensor y = s(x);
  auto& fc = static_cast<Linear&>(s[2]);
  Tensor ref =
      matmul(relu(x.flatten(1)), fc.weight().transpose(0, 1)) + *fc.bias();
  EXPECT_EQ(y.to_vector<float>(), ref.to_vector<float>());

  HostTensor hx = to_host(x);
  auto check = [&](Module& m, double (*f)(double), const char* label) {
    std::vector<double> want;
    for (double v : hx.v) want.push_back(f(v));
    expect_near_all(m(x), want, 2e-6, label);
  };
  ReLU relu_m;
  GELU gelu_m;
  GELU gelu_tanh_m(true);
  SiLU silu_m;
  Sigmoid sigmoid_m;
  Tanh tanh_m;
  check(
      relu_m, [](double v) { return v > 0 ? v : 0.0; }, "relu");
  check(
      gelu_m,
      [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); },
      "gelu");
  check(
      gelu_tanh_m,
      [](double v) {
        return 0.5 * v *
               (1 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) *
                              (v + 0.044715 * v * v * v)));
      },
      "gelu tanh");
  check(
      silu_m, [](double v) { return v / (1 + std::exp(-v)); }, "silu");
  check(
      sigmoid_m, [](double v) { return 1 / (1 + std::exp(-v)); }, "sigmoid");
  check(
      tanh_m, [](double v) { return std::tanh(v); }, "tanh");
  Softmax sm(1);
  std::vector<double> want(hx.v.size());
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t k = 0; k < 20; ++k) {
      double z = 0;
      for (int64_t c = 0; c < 3; ++c)
        z += std::exp(hx.v[size_t(n * 60 + c * 20 + k)]);
      for (int64_t c = 0; c < 3; ++c) {
        size_t i = size_t(n * 60 + c * 20 + k);
        want[i] = std::exp(hx.v[i]) / z;
      }
    }
  }
  expect_near_all(sm(x), want, 1e-6, "softmax");
}

TEST_F(Layers, EmbeddingLooksUpRows) {
  Embedding emb(10, 4, cpu, gen);
  Tensor ids = from_vector<int64_t>({3, 0, 9, 3, 1, 1}, {2, 3}, cpu);
  Tensor y = emb(ids);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  std::vector<float> w = emb.weight().to_vector<float>(),
                     got = y.to_vector<float>();
  std::vector<int64_t> idv = ids.to_vector<int64_t>();
  for (size_t i = 0; i < 6; ++i) {
    for (size_t d = 0; d < 4; ++d) {
      EXPECT_EQ(got[i * 4 + d], w[size_t(idv[i]) * 4 + d]);
    }
  }
  expect_error<ValueError>([&] { emb(from_vector<int64_t>({10}, cpu)); },
                           {"10"});
}

TEST_F(Layers, BatchNormUsesBatchStatisticsThenRunningOnes) {
  BatchNorm2d bn(3, cpu, 1e-5, 0.1, true, DType::f64);
  set_value(*bn.named_parameters()[0].tensor,
            from_vector<double>({1.0, 2.0, -1.0}, cpu));
  set_value(*bn.named_parameters()[1].tensor,
            from_vector<double>({0.0, 0.5, 3.0}, cpu));
  Tensor x = conformance::random_tensor({4, 3, 5, 2}, DType::f64, cpu, 6,
                                        conformance::Layout::contiguous, -3, 5);
  HostTensor hx = to_host(x);
  const double w[3] = {1.0, 2.0, -1.0}, b[3] = {0.0, 0.5, 3.0};
  std::vector<double> mean(3, 0), var(3, 0);
  const int64_t per = 4 * 5 * 2;
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t k = 0; k < 10; ++k)
        mean[size_t(c)] += hx.v[size_t(n * 30 + c * 10 + k)];
    }
    mean[size_t(c)] /= double(per);
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t k = 0; k < 10; ++k) {
        double d = hx.v[size_t(n * 30 + c * 10 + k)] - mean[size_t(c)];
        var[size_t(c)] += d * d;
      }
    }
    var[size_t(c)] /= double(per);
  }
  auto expected = [&](const std::vector<double>& m,
                      const std::vector<double>& v) {
    std::vector<double> out(hx.v.size());
    for (size_t i = 0; i < out.size(); ++i) {
      size_t c = (i / 10) % 3;
      out[i] = (hx.v[i] - m[c]) / std::sqrt(v[c] + 1e-5) * w[c] + b[c];
    }
    return out;
  };
  expect_near_all(bn(x), expected(mean, var), 1e-10, "batch norm train");
  bn(x);  // A second step moves the running estimates again.
  std::vector<double> rm(3), rv(3);
  for (size_t c = 0; c < 3; ++c) {
    double unbiased = var[c] * double(per) / double(per - 1);
    rm[c] = 0.9 * (0.9 * 0.0 + 0.1 * mean[c]) + 0.1 * mean[c];
    rv[c] = 0.9 * (0.9 * 1.0 + 0.1 * unbiased) + 0.1 * unbiased;
  }
  auto buffers = bn.named_buffers();
  expect_near_all(*buffers[0].tensor, rm, 1e-12, "running mean");
  expect_near_all(*buffers[1].tensor, rv, 1e-12, "running var");
  EXPECT_EQ(buffers[2].tensor->item<int64_t>(), 2);
  bn.eval();
  expect_near_all(bn(x), expected(rm, rv), 1e-10, "batch norm eval");
  expect_error<ShapeError>(
      [&] {
        bn(zeros({2, 4, 3, 3}, cpu, DType::f64));
      },
      {"BatchNorm2d", "[N, 3, H, W]", "f64[2, 4, 3, 3]"});
  bn.train();
  expect_error<ValueError>(
      [&] {
        bn(zeros({1, 3, 1, 1}, cpu, DType::f64));
      },
      {"more than one value per channel"});
}

TEST_F(Layers, LayerNormAndRmsNormOverTrailingAxes) {
  LayerNorm ln({4, 5}, cpu, 1e-5, true, DType::f64);
  RMSNorm rn({5}, cpu, 1e-6, DType::f64);
  set_value(*ln.named_parameters()[0].tensor,
            conformance::random_tensor({4, 5}, DType::f64, cpu, 7));
  set_value(*ln.named_parameters()[1].tensor,
            conformance::random_tensor({4, 5}, DType::f64, cpu, 8));
  set_value(*rn.named_parameters()[0].tensor,
            conformance::random_tensor({5}, DType::f64, cpu, 9));
  Tensor x = conformance::random_tensor({3, 4, 5}, DType::f64, cpu, 10);
  HostTensor hx = to_host(x);
  HostTensor lw = to_host(*ln.named_parameters()[0].tensor);
  HostTensor lb = to_host(*ln.named_parameters()[1].tensor);
  HostTensor rw = to_host(*rn.named_parameters()[0].tensor);
  std::vector<double> want_ln(60), want_rn(60);
  for (size_t r = 0; r < 3; ++r) {
    double m = 0, v = 0;
    for (size_t k = 0; k < 20; ++k) m += hx.v[r * 20 + k];
    m /= 20;
    for (size_t k = 0; k < 20; ++k)
      v += (hx.v[r * 20 + k] - m) * (hx.v[r * 20 + k] - m);
    v /= 20;
    for (size_t k = 0; k < 20; ++k) {
      want_ln[r * 20 + k] =
          (hx.v[r * 20 + k] - m) / std::sqrt(v + 1e-5) * lw.v[k] + lb.v[k];
    }
  }
  for (size_t r = 0; r < 12; ++r) {
    double ms = 0;
    for (size_t k = 0; k < 5; ++k) ms += hx.v[r * 5 + k] * hx.v[r * 5 + k];
    ms /= 5;
    for (size_t k = 0; k < 5; ++k) {
      want_rn[r * 5 + k] = hx.v[r * 5 + k] / std::sqrt(ms + 1e-6) * rw.v[k];
    }
  }
  expect_near_all(ln(x), want_ln, 1e-10, "layer norm");
  expect_near_all(rn(x), want_rn, 1e-10, "rms norm");
  expect_error<ShapeError>(
      [&] {
        ln(zeros({3, 5, 4}, cpu, DType::f64));
      },
      {"LayerNorm", "does not end in [4, 5]"});
  expect_error<ValueError>([&] { RMSNorm({}, cpu); }, {"RMSNorm"});
}

TEST_F(Layers, DropoutScalesKeptValuesAndResumesItsStream) {
  Dropout d(0.25, cpu, 42);
  Tensor x = full({4000}, 2.0, cpu);
  std::vector<float> y = d(x).to_vector<float>();
  int kept = 0;
  for (float v : y) {
    ASSERT_TRUE(v == 0.0f || std::fabs(v - 2.0f / 0.75f) < 1e-6f) << v;
    kept += v != 0.0f;
  }
  EXPECT_NEAR(kept / 4000.0, 0.75, 0.03);
  // A saved and reloaded dropout draws what the original draws next.
  std::map<std::string, Tensor> state = d.state_dict();
  Dropout e(0.25, cpu, 7);
  e.load_state_dict(state);
  EXPECT_EQ(d(x).to_vector<float>(), e(x).to_vector<float>());
  EXPECT_NE(d(x).to_vector<float>(), y);
  d.eval();
  EXPECT_EQ(d(x).data(), x.data());  // The identity, no copy.
  Dropout all(1.0, cpu);
  EXPECT_EQ(all(x).to_vector<float>(), std::vector<float>(4000, 0.0f));
  expect_error<ValueError>([&] { Dropout(1.5, cpu); }, {"Dropout", "1.5"});
  state["rng_state"] = from_vector<int64_t>({1, 3}, cpu);
  expect_error<ValueError>([&] { e.load_state_dict(state); },
                           {"Dropout", "offset 3"});
}

}  // namespace
}  // namespace nascent::nn
