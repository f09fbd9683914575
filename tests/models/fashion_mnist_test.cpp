// The trainer behind `nascent train`: training resumed from a checkpoint
// continues bit for bit, the loss falls on learnable data, evaluation
// counts correctly, and bad options or checkpoints are refused.
#include "nascent/models/fashion_mnist.h"

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/io/safetensors.h"
#include "nascent/nascent.h"

namespace nascent::models {
namespace {

using nascent::testing::expect_error;
using nascent::testing::TempDir;
using train::ClassifierTrainer;
using train::EvalResult;
using train::TrainOptions;

// n images of 28x28 whose class c lights up rows 2c..2c+3 (plus noise):
// learnable by both models within a few dozen steps.
data::ImageDataset learnable(int64_t n, uint64_t seed) {
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 784));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto r = philox4x32(uint64_t(i), seed);
    int64_t c = int64_t(r[0] % 10);
    labels[size_t(i)] = c;
    for (int64_t k = 0; k < 784; ++k) {
      auto q = philox4x32(uint64_t(i * 784 + k), seed + 1);
      int64_t row = k / 28;
      bool lit = row >= 2 * c && row < 2 * c + 4;
      pixels[size_t(i * 784 + k)] = uint8_t((lit ? 160 : 0) + q[0] % 90);
    }
  }
  return data::ImageDataset(pixels, {1, 28, 28}, labels, 10);
}

std::vector<std::vector<float>> parameters_of(ClassifierTrainer& t) {
  std::vector<std::vector<float>> out;
  for (Tensor* p : t.model().parameters()) out.push_back(p->to_vector<float>());
  return out;
}

// Runs `steps` steps from the trainer's position, as `nascent train` does.
void run(ClassifierTrainer& t, const data::DataLoader& loader, int64_t steps) {
  for (int64_t s = 0; s < steps; ++s) {
    if (t.next_batch == loader.num_batches()) {
      ++t.epoch;
      t.next_batch = 0;
    }
    data::Batch b = loader.batch(loader.order(t.epoch), t.next_batch);
    t.step(b).item<float>();
    ++t.next_batch;
  }
}

class Trainer
    : public ::testing::TestWithParam<std::pair<const char*, const char*>> {
 protected:
  cpu::Backend cpu;
  TempDir dir;
};

TEST_P(Trainer, ResumedTrainingIsBitForBitTheSame) {
  auto [model, optimizer] = GetParam();
  data::ImageDataset ds = learnable(150, 1);
  TrainOptions o;
  o.model = model;
  o.optimizer = optimizer;
  o.batch_size = 32;  // 5 batches per epoch, the last one short.
  o.epochs = 2;
  o.lr = std::string(optimizer) == "sgd" ? 0.05 : 2e-3;
  o.weight_decay = 0.01;
  o.warmup_steps = 2;
  o.seed = 7;
  // N + M steps in one go...
  ClassifierTrainer whole(o, cpu, ds.size(), fashion_mnist_task());
  data::DataLoader loader(ds, whole.loader_options(), whole.backend());
  run(whole, loader, 7);
  // ...and N steps, a checkpoint, a fresh trainer, M steps (crossing an
  // epoch boundary on both sides).
  ClassifierTrainer first(o, cpu, ds.size(), fashion_mnist_task());
  data::DataLoader loader1(ds, first.loader_options(), first.backend());
  run(first, loader1, 3);
  std::string path = dir.file("resume.safetensors");
  first.save(path);
  // As `nascent train --resume` does: the checkpoint's options.
  ClassifierTrainer second(ClassifierTrainer::checkpoint_options(path), cpu,
                           ds.size(), fashion_mnist_task());
  second.load(path);
  EXPECT_EQ(second.steps(), 3);
  EXPECT_EQ(second.epoch, 0);
  EXPECT_EQ(second.next_batch, 3);
  data::DataLoader loader2(ds, second.loader_options(), second.backend());
  run(second, loader2, 4);
  EXPECT_EQ(second.epoch, 1);
  EXPECT_EQ(second.steps(), whole.steps());
  std::vector<std::vector<float>> a = parameters_of(whole),
                                  b = parameters_of(second);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "parameter " << i << " of " << model << "/"
                          << optimizer;
  }
  // The runs did move the weights.
  ClassifierTrainer untouched(o, cpu, ds.size(), fashion_mnist_task());
  EXPECT_NE(parameters_of(untouched)[0], a[0]);
}

INSTANTIATE_TEST_SUITE_P(
    ModelsAndOptimizers, Trainer,
    ::testing::Values(std::pair<const char*, const char*>{"mlp", "adam"},
                      std::pair<const char*, const char*>{"mlp", "sgd"},
                      std::pair<const char*, const char*>{"cnn", "adamw"}),
    [](const auto& param_info) {
      return std::string(param_info.param.first) + "_" +
             param_info.param.second;
    });

TEST(TrainerLearns, LossFallsAndAccuracyRises) {
  cpu::Backend cpu;
  data::ImageDataset train_set = learnable(512, 3),
                     test_set = learnable(200, 4);
  for (const char* model : {"mlp", "cnn"}) {
    TrainOptions o;
    o.model = model;
    o.batch_size = 32;
    o.epochs = 2;
    o.seed = 1;
    ClassifierTrainer t(o, cpu, train_set.size(), fashion_mnist_task());
    EvalResult before = t.evaluate(test_set, 64);
    data::DataLoader loader(train_set, t.loader_options(), t.backend());
    std::vector<float> losses;
    for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
      for (const data::Batch& b : loader.epoch(epoch)) {
        losses.push_back(t.step(b).item<float>());
      }
    }
    EvalResult after = t.evaluate(test_set, 64);
    EXPECT_EQ(after.count, 200);
    EXPECT_NEAR(before.loss, std::log(10.0), 0.7) << model;
    EXPECT_LT(losses.back(), 0.5f * losses.front()) << model;
    EXPECT_LT(after.loss, 0.3 * before.loss) << model;
    EXPECT_GT(after.accuracy, 0.9) << model;
    EXPECT_LT(before.accuracy, 0.4) << model;
  }
}

TEST(TrainerErrors, OptionsAndCheckpoints) {
  cpu::Backend cpu;
  TempDir dir;
  TrainOptions o;
  o.model = "resnet";
  expect_error<ValueError>(
      [&] { ClassifierTrainer(o, cpu, 10, fashion_mnist_task()); },
      {"unknown model \"resnet\"", "cnn or mlp"});
  o.model = "mlp";
  o.optimizer = "lbfgs";
  expect_error<ValueError>(
      [&] { ClassifierTrainer(o, cpu, 10, fashion_mnist_task()); },
      {"unknown optimizer \"lbfgs\""});
  o.optimizer = "sgd";
  o.schedule = "cyclic";
  expect_error<ValueError>(
      [&] { ClassifierTrainer(o, cpu, 10, fashion_mnist_task()); },
      {"unknown schedule \"cyclic\""});
  o.schedule = "cosine";
  expect_error<ValueError>(
      [&] { ClassifierTrainer(o, cpu, 0, fashion_mnist_task()); },
      {"training examples (0)"});
  ClassifierTrainer mlp(o, cpu, 10, fashion_mnist_task());
  std::string path = dir.file("mlp.safetensors");
  mlp.save(path);
  EXPECT_EQ(ClassifierTrainer::checkpoint_options(path).to_json(), o.to_json());
  TrainOptions cnn = o;
  cnn.model = "cnn";
  ClassifierTrainer other(cnn, cpu, 10, fashion_mnist_task());
  expect_error<ValueError>(
      [&] { other.load(path); },
      {path, "trained a mlp with sgd, not a cnn with sgd"});
  std::string plain = dir.file("plain.safetensors");
  io::save_safetensors(plain, {{"w", zeros({1}, cpu)}});
  expect_error<FormatError>(
      [&] { ClassifierTrainer::checkpoint_options(plain); },
      {plain, "not a checkpoint of `nascent train`"});
  expect_error<ValueError>(
      [&] {
        TrainOptions::from_json({{"model", "cnn"}});
      },
      {"\"optimizer\" is missing"});
  nlohmann::json j = o.to_json();
  j["epochs"] = "three";
  expect_error<ValueError>([&] { TrainOptions::from_json(j); },
                           {"\"epochs\" is \"three\""});
}

}  // namespace
}  // namespace nascent::models
