// Losses against float64 references written from their definitions, on
// random inputs, with extreme logits for stability, and their errors.
#include "nascent/nn/loss.h"

#include <cmath>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "io/test_files.h"
#include "nascent/nascent.h"

namespace nascent::nn {
namespace {

using nascent::testing::expect_error;

// log-softmax of one row in float64, shifted by its max.
std::vector<double> ref_log_softmax(const std::vector<double>& row) {
  double m = row[0];
  for (double v : row) m = std::max(m, v);
  double z = 0;
  for (double v : row) z += std::exp(v - m);
  std::vector<double> out;
  for (double v : row) out.push_back(v - m - std::log(z));
  return out;
}

// Per-example cross-entropy as PyTorch defines it (0 for ignored targets).
std::vector<double> ref_cross_entropy(const std::vector<double>& logits,
                                      int64_t classes,
                                      const std::vector<int64_t>& targets,
                                      const CrossEntropyOptions& o,
                                      bool inputs_are_log_probs = false) {
  std::vector<double> out;
  for (size_t n = 0; n < targets.size(); ++n) {
    std::vector<double> row(logits.begin() + ptrdiff_t(n) * classes,
                            logits.begin() + ptrdiff_t(n + 1) * classes);
    std::vector<double> lp = inputs_are_log_probs ? row : ref_log_softmax(row);
    if (targets[n] == o.ignore_index) {
      out.push_back(0.0);
      continue;
    }
    double smooth = 0;
    for (double v : lp) smooth -= v / double(classes);
    double nll = -lp[size_t(targets[n])];
    out.push_back((1 - o.label_smoothing) * nll + o.label_smoothing * smooth);
  }
  return out;
}

double reduce(const std::vector<double>& v, Reduction r, double count) {
  double s = 0;
  for (double x : v) s += x;
  return r == Reduction::mean ? s / count : s;
}

class Losses : public ::testing::Test {
 protected:
  cpu::Backend cpu;
};

TEST_F(Losses, CrossEntropyMatchesItsDefinition) {
  const int64_t n = 37, c = 11;
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor logits = conformance::random_tensor(
        {n, c}, dt, cpu, 1, conformance::Layout::contiguous, -6, 6);
    std::vector<int64_t> t(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) t[size_t(i)] = (i * 7) % c;
    t[3] = t[20] = -100;
    std::vector<double> lg = logits.to_vector<double>();
    for (double smoothing : {0.0, 0.1}) {
      for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
        CrossEntropyOptions o;
        o.label_smoothing = smoothing;
        o.reduction = r;
        for (DType tdt : {DType::i64, DType::i32}) {
          Tensor targets = from_vector(t, cpu).cast(tdt);
          Tensor got = cross_entropy(logits, targets, o);
          std::vector<double> per = ref_cross_entropy(lg, c, t, o);
          double tol = dt == DType::f64 ? 1e-12 : 2e-6;
          std::string label = fmt::format("{} smoothing {} reduction {}",
                                          name(dt), smoothing, int(r));
          if (r == Reduction::none) {
            EXPECT_EQ(got.shape(), Shape{n});
            std::vector<double> g = got.to_vector<double>();
            for (size_t i = 0; i < per.size(); ++i) {
              EXPECT_NEAR(g[i], per[i], tol * (1 + per[i])) << label;
            }
          } else {
            double want = reduce(per, r, double(n - 2));
            EXPECT_EQ(got.ndim(), 0) << label;
            EXPECT_NEAR(got.item<double>(), want, tol * (1 + want)) << label;
          }
        }
      }
    }
    // nll_loss on log-probabilities agrees with cross_entropy.
    Tensor targets = from_vector(t, cpu);
    EXPECT_NEAR(nll_loss(log_softmax(logits, 1), targets).item<double>(),
                cross_entropy(logits, targets).item<double>(), 1e-6);
  }
}

TEST_F(Losses, CrossEntropyIsStableForHugeLogits) {
  Tensor logits =
      from_vector<float>({1e4f, -1e4f, 0.0f, 3e4f, 3e4f, -3e4f}, {2, 3}, cpu);
  Tensor targets = from_vector<int64_t>({1, 0}, cpu);
  CrossEntropyOptions o;
  o.reduction = Reduction::none;
  std::vector<float> got = cross_entropy(logits, targets, o).to_vector<float>();
  EXPECT_FLOAT_EQ(got[0], 2e4f);  // -log_softmax: 1e4 - (-1e4).
  EXPECT_NEAR(got[1], std::log(2.0), 1e-6);
  // Every target ignored: the mean is NaN, as PyTorch.
  Tensor ignored = from_vector<int64_t>({-100, -100}, cpu);
  EXPECT_TRUE(std::isnan(cross_entropy(logits, ignored).item<float>()));
  o.ignore_index = 2;
  o.reduction = Reduction::sum;
  EXPECT_FLOAT_EQ(
      cross_entropy(logits, from_vector<int64_t>({2, 0}, cpu), o).item<float>(),
      got[1]);
}

TEST_F(Losses, CrossEntropyErrors) {
  Tensor logits = zeros({4, 3}, cpu);
  expect_error<ShapeError>(
      [&] { cross_entropy(zeros({4}, cpu), zeros({4}, cpu, DType::i64)); },
      {"cross_entropy", "[N, C]", "f32[4]"});
  expect_error<ShapeError>(
      [&] { cross_entropy(logits, zeros({3}, cpu, DType::i64)); },
      {"cross_entropy", "targets must be [N] = [4]", "i64[3]"});
  expect_error<DTypeError>([&] { cross_entropy(logits, zeros({4}, cpu)); },
                           {"cross_entropy", "i64 or i32", "f32[4]"});
  expect_error<DTypeError>(
      [&] {
        cross_entropy(zeros({4, 3}, cpu, DType::i64),
                      zeros({4}, cpu, DType::i64));
      },
      {"cross_entropy", "floating"});
  expect_error<ValueError>(
      [&] {
        cross_entropy(logits, from_vector<int64_t>({0, 1, 3, 2}, cpu));
      },
      {"cross_entropy", "not a class in [0, 3)"});
  CrossEntropyOptions o;
  o.label_smoothing = 1.5;
  expect_error<ValueError>(
      [&] { cross_entropy(logits, zeros({4}, cpu, DType::i64), o); },
      {"label_smoothing 1.5"});
}

TEST_F(Losses, MseAndBinaryCrossEntropyWithLogits) {
  Tensor a = conformance::random_tensor(
      {5, 6}, DType::f64, cpu, 2, conformance::Layout::contiguous, -30, 30);
  Tensor b = conformance::random_tensor({5, 6}, DType::f64, cpu, 3,
                                        conformance::Layout::transposed, 0, 1);
  Tensor w = conformance::random_tensor(
      {6}, DType::f64, cpu, 4, conformance::Layout::contiguous, 0.5, 3);
  std::vector<double> x = a.to_vector<double>(), t = b.to_vector<double>(),
                      pw = w.to_vector<double>();
  std::vector<double> mse, bce, bce_w;
  for (size_t i = 0; i < x.size(); ++i) {
    mse.push_back((x[i] - t[i]) * (x[i] - t[i]));
    // -[t log s(x) + (1 - t) log(1 - s(x))], with log s(x) = -log1p(e^-x).
    double log_s = x[i] >= 0 ? -std::log1p(std::exp(-x[i]))
                             : x[i] - std::log1p(std::exp(x[i]));
    double log_1ms = log_s - x[i];
    bce.push_back(-(t[i] * log_s + (1 - t[i]) * log_1ms));
    bce_w.push_back(-(pw[i % 6] * t[i] * log_s + (1 - t[i]) * log_1ms));
  }
  EXPECT_NEAR(mse_loss(a, b).item<double>(), reduce(mse, Reduction::mean, 30),
              1e-10);
  EXPECT_NEAR(mse_loss(a, b, Reduction::sum).item<double>(),
              reduce(mse, Reduction::sum, 30), 1e-9);
  std::vector<double> got =
      binary_cross_entropy_with_logits(a, b, Reduction::none)
          .to_vector<double>();
  std::vector<double> got_w =
      binary_cross_entropy_with_logits(a, b, Reduction::none, &w)
          .to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(got[i], bce[i], 1e-12 * (1 + bce[i])) << i;
    EXPECT_NEAR(got_w[i], bce_w[i], 1e-12 * (1 + bce_w[i])) << i;
  }
  EXPECT_NEAR(binary_cross_entropy_with_logits(a, b).item<double>(),
              reduce(bce, Reduction::mean, 30), 1e-12 * 30);
  // Huge logits stay finite.
  Tensor big = from_vector<float>({100.0f, -100.0f}, cpu);
  Tensor tb = from_vector<float>({0.0f, 1.0f}, cpu);
  EXPECT_FLOAT_EQ(
      binary_cross_entropy_with_logits(big, tb, Reduction::sum).item<float>(),
      200.0f);
  expect_error<ShapeError>(
      [&] {
        mse_loss(a, zeros({6, 5}, cpu, DType::f64));
      },
      {"mse_loss", "f64[5, 6]", "f64[6, 5]"});
  expect_error<ShapeError>(
      [&] { binary_cross_entropy_with_logits(a, zeros({5}, cpu, DType::f64)); },
      {"binary_cross_entropy_with_logits", "f64[5, 6]", "f64[5]"});
}

}  // namespace
}  // namespace nascent::nn
