// The trainable LLaMA: its export runs in the inference model (llama::load)
// with the same logits, its gradient matches finite differences, and AdamW
// on it learns a batch by heart.
#include "nascent/models/llama/trainable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "nascent/autodiff/autodiff.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/random_model.h"
#include "nascent/optim/optimizer.h"
#include "tests/io/test_files.h"

namespace nascent::llama {
namespace {

using testing::expect_error;

Config small() {
  return Config::llama(320, 64, 2, 4, 2, 96, 32);
}

std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, int32_t(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = d(rng);
  return ids;
}

// Largest |a - b| over the spread of b.
double relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0.0, lo = b[0], hi = b[0];
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    lo = std::min(lo, double(b[i]));
    hi = std::max(hi, double(b[i]));
  }
  return diff / (hi - lo);
}

// The parameters, marked as requiring gradients.
std::vector<Tensor> trained_parameters(TrainableModel& lm) {
  std::vector<Tensor> params;
  for (const nn::NamedTensor& p : lm.named_parameters()) {
    autodiff::set_requires_grad(*p.tensor);
    params.push_back(*p.tensor);
  }
  return params;
}

TEST(TrainableLlama, ParametersAreNamedAsGgufTensors) {
  cpu::Backend cpu;
  TrainableModel lm(small(), cpu, 1);
  std::vector<std::string> names;
  for (const nn::NamedTensor& p : lm.named_parameters()) {
    names.push_back(p.name);
  }
  ASSERT_EQ(names.size(), 2 + 9 * 2 + 1u);
  EXPECT_EQ(names.front(), "token_embd.weight");
  EXPECT_EQ(names[1], "blk.0.attn_norm.weight");
  EXPECT_EQ(names[4], "blk.0.attn_v.weight");
  EXPECT_EQ(names[10], "blk.1.attn_norm.weight");
  EXPECT_EQ(names.back(), "output.weight");
  EXPECT_EQ(lm.named_parameters()[4].tensor->shape(), (Shape{32, 64}));
}

// The same weights through llama::load (KV cache, fused or composed ops,
// llama.cpp's file layout) give the training forward's logits.
TEST(TrainableLlama, ExportedFileRunsWithTheSameLogits) {
  cpu::Backend cpu;
  const Config c = small();
  TrainableModel lm(c, cpu, 3);
  const std::vector<int32_t> ids = random_ids(13, c.n_vocab, 5);
  const Tensor batch = from_data(ids.data(), {1, 13}, DType::i32, cpu);
  const std::vector<float> want = lm.forward(batch).to_vector<float>();
  testing::TempDir dir;
  for (QuantType type : {QuantType::f32, QuantType::f16, QuantType::q8_0}) {
    SCOPED_TRACE(name(type));
    const std::string path = dir.file(std::string(name(type)) + ".gguf");
    export_gguf(lm, synthetic_spm_vocab(c.n_vocab), type, path);
    auto model = load(path, cpu);
    EXPECT_EQ(model->config().n_vocab, c.n_vocab);
    EXPECT_EQ(model->config().n_head_kv, c.n_head_kv);
    const std::vector<float> got =
        model->forward(ids, 0, LogitsMode::all).to_vector<float>();
    const double bound = type == QuantType::f32   ? 1e-4
                         : type == QuantType::f16 ? 5e-3
                                                  : 3e-2;
    EXPECT_LT(relative_diff(got, want), bound);
  }
  // The bounds mean something: another model's logits are far off.
  TrainableModel other(c, cpu, 4);
  EXPECT_GT(relative_diff(other.forward(batch).to_vector<float>(), want), 0.1);
}

TEST(TrainableLlama, RowsOfABatchAreIndependentSequences) {
  cpu::Backend cpu;
  const Config c = small();
  TrainableModel lm(c, cpu, 2);
  const std::vector<int32_t> ids = random_ids(2 * 9, c.n_vocab, 8);
  const Tensor both =
      lm.forward(from_data(ids.data(), {2, 9}, DType::i32, cpu));
  for (int64_t r = 0; r < 2; ++r) {
    const Tensor one =
        lm.forward(from_data(ids.data() + 9 * r, {1, 9}, DType::i32, cpu));
    EXPECT_LT(relative_diff(both.narrow(0, r, 1).to_vector<float>(),
                            one.to_vector<float>()),
              1e-5);
  }
  // Causal: the first 4 positions do not see what follows them.
  const Tensor prefix =
      lm.forward(from_data(ids.data(), {1, 4}, DType::i32, cpu));
  EXPECT_LT(
      relative_diff(prefix.to_vector<float>(),
                    both.narrow(0, 0, 1).narrow(1, 0, 4).to_vector<float>()),
      1e-5);
}

// Central differences of the loss along a random direction of a weight
// (in f32, hence the 3% bound) against the gradient's dot product with it.
TEST(TrainableLlama, GradientMatchesFiniteDifferences) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  const Config c = small();
  TrainableModel lm(c, ad, 6);
  const std::vector<int32_t> ids = random_ids(3 * 11, c.n_vocab, 9);
  const Tensor batch = from_data(ids.data(), {3, 11}, DType::i32, ad);
  const std::vector<Tensor> params = trained_parameters(lm);
  const std::vector<Tensor> grads = autodiff::grad({lm.loss(batch)}, params);
  autodiff::NoGradGuard no_grad;
  Generator gen(11);
  for (size_t i : {size_t(0), size_t(5), size_t(13), params.size() - 1}) {
    SCOPED_TRACE(lm.named_parameters()[i].name);
    Tensor& w = *lm.named_parameters()[i].tensor;
    const Tensor saved = w.clone();
    const Tensor d = normal(w.shape(), 0.0, 1.0, ad, gen);
    const double eps = 0.1 / std::sqrt(double(w.numel()));
    assign(w, saved + d * eps);
    const double up = lm.loss(batch).item<double>();
    assign(w, saved - d * eps);
    const double down = lm.loss(batch).item<double>();
    assign(w, saved);
    const double numeric = (up - down) / (2 * eps);
    const double analytic = sum(grads[i] * d).item<double>();
    EXPECT_NEAR(numeric, analytic, 0.03 * std::abs(analytic) + 3e-3)
        << "numeric " << numeric << " analytic " << analytic;
  }
}

TEST(TrainableLlama, AdamWLearnsABatchByHeart) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  const Config c = small();
  TrainableModel lm(c, ad, 7);
  const std::vector<int32_t> ids = random_ids(4 * 17, c.n_vocab, 10);
  const Tensor batch = from_data(ids.data(), {4, 17}, DType::i32, ad);
  const std::vector<Tensor> params = trained_parameters(lm);
  optim::AdamW opt(lm.named_parameters(), {.lr = 3e-3});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 40; ++step) {
    const Tensor loss = lm.loss(batch);
    const std::vector<Tensor> grads = autodiff::grad({loss}, params);
    autodiff::NoGradGuard no_grad;
    opt.step(grads);
    last = autodiff::detach(loss).item<double>();
    if (step == 0) first = last;
  }
  // A random model starts near ln(320) = 5.77 nats a token.
  EXPECT_NEAR(first, std::log(320.0), 1.0);
  EXPECT_LT(last, 0.2 * first);
}

TEST(TrainableLlama, BadConfigsAndIdsAreRefused) {
  cpu::Backend cpu;
  Config c = small();
  c.n_head_kv = 3;
  expect_error<ValueError>([&] { TrainableModel m(c, cpu, 1); },
                           {"TrainableModel", "n_head 4", "n_head_kv 3"});
  c = small();
  c.arch = "qwen2";
  expect_error<ValueError>([&] { TrainableModel m(c, cpu, 1); },
                           {"qwen2", "cannot be trained"});
  TrainableModel lm(small(), cpu, 1);
  const Tensor flat = zeros({5}, cpu, DType::i32);
  expect_error<ShapeError>([&] { lm.forward(flat); },
                           {"TrainableModel", "i32[5]"});
  const Tensor too_long = zeros({1, 33}, cpu, DType::i32);
  expect_error<ShapeError>([&] { lm.forward(too_long); }, {"T <= 32"});
  const Tensor one = zeros({2, 1}, cpu, DType::i32);
  expect_error<ShapeError>([&] { lm.loss(one); }, {"2 <= T"});
  testing::TempDir dir;
  expect_error<ValueError>(
      [&] {
        export_gguf(lm, synthetic_spm_vocab(400), QuantType::f16,
                    dir.file("x.gguf"));
      },
      {"export_gguf", "400 tokens", "the model 320"});
  expect_error<ValueError>(
      [&] {
        export_gguf(lm, synthetic_spm_vocab(320), QuantType::q4_k,
                    dir.file("x.gguf"));
      },
      {"rows of 64 values", "q4_K"});
}

}  // namespace
}  // namespace nascent::llama
