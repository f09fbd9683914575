// The language-model trainer: a resumed run is bit for bit the run that did
// not stop, a step averages its micro-batches' gradients and clips their
// norm, batches are deterministic windows of the stream, training learns,
// and checkpoints carry the options and the tokenizer.
#include "nascent/models/llama/lm_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/random_model.h"
#include "tests/io/test_files.h"

namespace nascent::llama {
namespace {

using testing::expect_error;

LmOptions tiny() {
  LmOptions o;
  o.n_vocab = 300;
  o.n_embd = 32;
  o.n_layer = 2;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 48;
  o.seq_len = 12;
  o.steps = 8;
  o.train.batch_size = 3;
  o.train.warmup_steps = 2;
  o.train.seed = 5;
  return o;
}

// SGD without momentum, decay, warm-up or schedule: a step is -lr * grad.
void plain_sgd(LmOptions& o) {
  o.train.optimizer = "sgd";
  o.train.momentum = 0;
  o.train.weight_decay = 0;
  o.train.schedule = "constant";
  o.train.warmup_steps = 0;
}

// A stream with structure to learn: a repeated phrase with noise.
std::vector<int32_t> stream(int64_t n, uint32_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    ids[size_t(i)] =
        (s >> 28) == 0 ? int32_t((s >> 8) % 300) : int32_t(3 + (i % 17) * 7);
  }
  return ids;
}

std::vector<std::vector<float>> weights(LmTrainer& t) {
  std::vector<std::vector<float>> w;
  for (const nn::NamedTensor& p : t.model().named_parameters()) {
    w.push_back(p.tensor->to_vector<float>());
  }
  return w;
}

bool bitwise_equal(const std::vector<std::vector<float>>& a,
                   const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) {
      return false;
    }
  }
  return true;
}

TEST(LmTrainer, ResumedRunEqualsTheUninterruptedOneBitForBit) {
  cpu::Backend cpu;
  const std::vector<int32_t> data = stream(400, 1);
  LmOptions o = tiny();
  o.grad_accum = 2;
  LmTrainer straight(o, cpu, synthetic_spm_vocab(o.n_vocab));
  while (straight.steps() < o.steps) straight.step(data);

  testing::TempDir dir;
  const std::string path = dir.file("lm.safetensors");
  {
    LmTrainer first(o, cpu, synthetic_spm_vocab(o.n_vocab));
    for (int i = 0; i < 3; ++i) first.step(data);
    first.save(path, {{"note", "three steps"}});
  }
  LmTrainer resumed(LmTrainer::checkpoint_options(path), cpu,
                    LmTrainer::checkpoint_tokenizer(path));
  const nlohmann::json state = resumed.load(path);
  EXPECT_EQ(state["note"], "three steps");
  EXPECT_EQ(resumed.steps(), 3);
  while (resumed.steps() < o.steps) resumed.step(data);
  EXPECT_TRUE(bitwise_equal(weights(resumed), weights(straight)));
  // And a run that differs in one step does not compare equal.
  LmTrainer other(o, cpu, synthetic_spm_vocab(o.n_vocab));
  while (other.steps() < o.steps - 1) other.step(data);
  EXPECT_FALSE(bitwise_equal(weights(other), weights(straight)));
}

// With SGD, no clipping and a constant rate, a step moves each weight by
// -lr times the mean of the micro-batches' gradients.
TEST(LmTrainer, AccumulatedStepAveragesTheMicroBatchGradients) {
  cpu::Backend cpu;
  const std::vector<int32_t> data = stream(300, 2);
  LmOptions o = tiny();
  o.grad_accum = 3;
  o.clip = 0;
  plain_sgd(o);
  o.train.lr = 0.5;
  LmTrainer t(o, cpu, synthetic_spm_vocab(o.n_vocab));
  std::vector<Tensor> params;
  for (const nn::NamedTensor& p : t.model().named_parameters()) {
    params.push_back(*p.tensor);
  }
  std::vector<std::vector<double>> mean(params.size());
  for (int64_t m = 0; m < o.grad_accum; ++m) {
    const Tensor loss = t.model().loss(t.batch(data, 0, m));
    const std::vector<Tensor> g = autodiff::grad({loss}, params);
    for (size_t i = 0; i < params.size(); ++i) {
      const std::vector<float> gi = g[i].to_vector<float>();
      mean[i].resize(gi.size());
      for (size_t k = 0; k < gi.size(); ++k) {
        mean[i][k] += double(gi[k]) / double(o.grad_accum);
      }
    }
  }
  const std::vector<std::vector<float>> before = weights(t);
  t.step(data);
  const std::vector<std::vector<float>> after = weights(t);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    for (size_t k = 0; k < mean[i].size(); ++k) {
      const double moved = double(after[i][k]) - double(before[i][k]);
      worst = std::max(worst, std::abs(moved + o.train.lr * mean[i][k]));
      scale = std::max(scale, std::abs(o.train.lr * mean[i][k]));
    }
  }
  EXPECT_GT(scale, 1e-4);
  EXPECT_LT(worst, 1e-3 * scale + 1e-6);
}

TEST(LmTrainer, ClippingBoundsTheStepAndReportsTheNorm) {
  cpu::Backend cpu;
  const std::vector<int32_t> data = stream(300, 3);
  LmOptions o = tiny();
  o.clip = 1e-3;
  plain_sgd(o);
  o.train.lr = 1.0;
  LmTrainer t(o, cpu, synthetic_spm_vocab(o.n_vocab));
  const std::vector<std::vector<float>> before = weights(t);
  const LmStep s = t.step(data);
  const std::vector<std::vector<float>> after = weights(t);
  double moved2 = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    for (size_t k = 0; k < before[i].size(); ++k) {
      const double d = double(after[i][k]) - double(before[i][k]);
      moved2 += d * d;
    }
  }
  const double norm = s.grad_norm.item<double>();
  EXPECT_GT(norm, 10 * o.clip);  // It clipped.
  EXPECT_NEAR(std::sqrt(moved2), o.train.lr * o.clip, 1e-5);
  EXPECT_TRUE(std::isfinite(s.loss.item<double>()));
}

TEST(LmTrainer, BatchesAreDeterministicWindowsOfTheStream) {
  cpu::Backend cpu;
  const std::vector<int32_t> data = stream(100, 4);
  const LmOptions o = tiny();
  LmTrainer t(o, cpu, synthetic_spm_vocab(o.n_vocab));
  const std::vector<int32_t> a = t.batch(data, 7, 0).to_vector<int32_t>();
  EXPECT_EQ(a, t.batch(data, 7, 0).to_vector<int32_t>());
  EXPECT_NE(a, t.batch(data, 8, 0).to_vector<int32_t>());
  EXPECT_NE(a, t.batch(data, 7, 1).to_vector<int32_t>());
  ASSERT_EQ(a.size(), size_t(o.train.batch_size * (o.seq_len + 1)));
  // Each row is a contiguous window of the stream.
  for (int64_t r = 0; r < o.train.batch_size; ++r) {
    const auto row = a.begin() + r * (o.seq_len + 1);
    const auto at =
        std::search(data.begin(), data.end(), row, row + o.seq_len + 1);
    EXPECT_NE(at, data.end()) << "row " << r;
  }
  expect_error<ValueError>([&] { t.batch(std::vector<int32_t>(12, 1), 0, 0); },
                           {"12 tokens", "window of 13"});
}

TEST(LmTrainer, LearnsAndEvaluatesHeldOutText) {
  cpu::Backend cpu;
  const std::vector<int32_t> data = stream(2000, 5);
  const std::vector<int32_t> heldout = stream(400, 6);
  LmOptions o = tiny();
  o.steps = 60;
  o.train.lr = 1e-2;
  LmTrainer t(o, cpu, synthetic_spm_vocab(o.n_vocab));
  const double before = t.evaluate(heldout, 16);
  EXPECT_NEAR(before, std::log(300.0), 1.0);  // Near uniform at the start.
  while (t.steps() < o.steps) t.step(data);
  const double after = t.evaluate(heldout, 16);
  EXPECT_LT(after, before - 2.0);
  expect_error<ValueError>([&] { t.evaluate(std::vector<int32_t>(5, 1), 4); },
                           {"5 held-out tokens"});
}

TEST(LmTrainer, RejectsMismatchedCheckpointsAndOptions) {
  cpu::Backend cpu;
  testing::TempDir dir;
  const std::string path = dir.file("lm.safetensors");
  const LmOptions o = tiny();
  LmTrainer(o, cpu, synthetic_spm_vocab(o.n_vocab)).save(path);
  LmOptions wider = o;
  wider.n_embd = 64;
  LmTrainer w(wider, cpu, synthetic_spm_vocab(o.n_vocab));
  expect_error<ValueError>([&] { w.load(path); }, {path, "dim 32", "dim 64"});
  // The options survive the trip through JSON.
  EXPECT_EQ(LmTrainer::checkpoint_options(path).to_json(), o.to_json());
  EXPECT_EQ(LmTrainer::checkpoint_tokenizer(path).entries(),
            synthetic_spm_vocab(o.n_vocab).entries());
  expect_error<ValueError>([&] { LmTrainer(o, cpu, synthetic_spm_vocab(320)); },
                           {"320 tokens", "vocabulary 300"});
  LmOptions bad = o;
  bad.seq_len = 0;
  expect_error<ValueError>(
      [&] { LmTrainer(bad, cpu, synthetic_spm_vocab(o.n_vocab)); },
      {"sequence length (0)"});
  expect_error<ValueError>(
      [&] {
        LmOptions::from_json({{"train", o.train.to_json()}});
      },
      {"\"steps\""});
  // A file that is not a train-lm checkpoint.
  const std::string other = dir.file("other.safetensors");
  testing::write_bytes(other, std::vector<uint8_t>(16, 0));
  EXPECT_THROW(LmTrainer::checkpoint_options(other), FormatError);
}

}  // namespace
}  // namespace nascent::llama
