// Checkpoints: model, optimizer and training state round trip; files that
// are not checkpoints, or do not fit the model, are refused without
// changing the model; corrupt files raise FormatError.
#include "nascent/train/checkpoint.h"

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/io/safetensors.h"
#include "nascent/nascent.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/norm.h"

namespace nascent::train {
namespace {

using nascent::testing::expect_error;
using nascent::testing::read_bytes;
using nascent::testing::TempDir;
using nascent::testing::write_bytes;

std::shared_ptr<nn::Sequential> small_model(Backend& b, uint64_t seed,
                                            int64_t hidden = 8) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(4, hidden, b, gen));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Dropout>(0.5, b, seed));
  m->add(std::make_shared<nn::Linear>(hidden, 3, b, gen));
  return m;
}

std::vector<Tensor> fake_grads(nn::Module& m, uint64_t seed) {
  std::vector<Tensor> g;
  for (Tensor* p : m.parameters())
    g.push_back(randn(p->shape(), p->backend(), seed++));
  return g;
}

class Checkpoints : public ::testing::Test {
 protected:
  cpu::Backend cpu;
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
};

TEST_F(Checkpoints, ModelOptimizerAndTrainingStateRoundTrip) {
  auto a = small_model(cpu, 1);
  optim::Adam opt_a(a->named_parameters(), {.lr = 0.01});
  opt_a.step(fake_grads(*a, 10));
  (*a)(randn({2, 4}, cpu, 3));  // Advances the dropout stream.
  nlohmann::json training = {{"epoch", 2}, {"step", 17}, {"model", "mlp"}};
  save_checkpoint(path, *a, &opt_a, training);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt.safetensors"});

  auto b = small_model(cpu, 2);
  optim::Adam opt_b(b->named_parameters(), {.lr = 0.5});
  nlohmann::json got = load_checkpoint(path, *b, &opt_b);
  EXPECT_EQ(got, training);
  EXPECT_EQ(opt_b.lr(), 0.01);
  EXPECT_EQ(opt_b.step_count(), 1);
  for (auto& [name, t] : a->state_dict()) {
    EXPECT_EQ(t.to_vector<double>(),
              b->state_dict().at(name).to_vector<double>())
        << name;
  }
  // Both continue identically: optimizer moments and dropout stream came
  // back too.
  Tensor x = randn({5, 4}, cpu, 4);
  EXPECT_EQ((*a)(x).to_vector<float>(), (*b)(x).to_vector<float>());
  opt_a.step(fake_grads(*a, 20));
  opt_b.step(fake_grads(*b, 20));
  EXPECT_EQ(a->parameters()[0]->to_vector<float>(),
            b->parameters()[0]->to_vector<float>());

  Checkpoint c = read_checkpoint(path, cpu);
  EXPECT_TRUE(c.has_optimizer);
  EXPECT_EQ(c.model.size(), 5u);  // Two Linear layers and the dropout state.
  EXPECT_EQ(c.optimizer.config["optimizer"], "Adam");
}

TEST_F(Checkpoints, ModelOnlyCheckpoints) {
  auto a = small_model(cpu, 1);
  save_checkpoint(path, *a, nullptr, nlohmann::json::object());
  auto b = small_model(cpu, 2);
  EXPECT_EQ(load_checkpoint(path, *b, nullptr), nlohmann::json::object());
  optim::SGD sgd(b->named_parameters(), {});
  expect_error<ValueError>([&] { load_checkpoint(path, *b, &sgd); },
                           {path, "holds no optimizer state"});
  expect_error<ValueError>(
      [&] { save_checkpoint(path, *a, nullptr, nlohmann::json::array()); },
      {"training state must be a JSON object"});
}

TEST_F(Checkpoints, MismatchesAreRefusedAndChangeNothing) {
  auto a = small_model(cpu, 1);
  optim::SGD opt_a(a->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  opt_a.step(fake_grads(*a, 1));
  save_checkpoint(path, *a, &opt_a, {{"epoch", 1}});

  auto wide = small_model(cpu, 2, 16);
  std::vector<float> before = wide->parameters()[0]->to_vector<float>();
  expect_error<ShapeError>([&] { load_checkpoint(path, *wide, nullptr); },
                           {path, "\"0.weight\"", "f32[8, 4] in the state"});
  EXPECT_EQ(wide->parameters()[0]->to_vector<float>(), before);

  // The model fits but the optimizer does not: the model is restored.
  auto b = small_model(cpu, 3);
  before = b->parameters()[0]->to_vector<float>();
  optim::Adam adam(b->named_parameters(), {});
  expect_error<ValueError>([&] { load_checkpoint(path, *b, &adam); },
                           {path, "optimizer \"SGD\""});
  EXPECT_EQ(b->parameters()[0]->to_vector<float>(), before);

  // A plain safetensors file is not a checkpoint.
  std::string plain = dir.file("plain.safetensors");
  io::save_safetensors(plain, {{"model.0.weight", zeros({8, 4}, cpu)}});
  expect_error<FormatError>([&] { load_checkpoint(plain, *b, nullptr); },
                            {plain, "not a nascent checkpoint"});
  io::save_safetensors(
      plain, {{"w", zeros({1}, cpu)}},
      {{"format", "nascent.checkpoint.v1"}, {"training", "{"}});
  expect_error<FormatError>([&] { read_checkpoint(plain, cpu); },
                            {plain, "\"training\" is not a JSON object"});
  io::save_safetensors(
      plain, {{"w", zeros({1}, cpu)}},
      {{"format", "nascent.checkpoint.v1"}, {"training", "{}"}});
  expect_error<FormatError>(
      [&] { read_checkpoint(plain, cpu); },
      {plain, "\"w\" is neither model.* nor optimizer.*"});
}

TEST_F(Checkpoints, CorruptFilesRaiseFormatError) {
  auto a = small_model(cpu, 1);
  optim::SGD opt(a->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  opt.step(fake_grads(*a, 1));
  save_checkpoint(path, *a, &opt, {{"epoch", 1}});
  std::vector<uint8_t> good = read_bytes(path);
  std::string bad = dir.file("bad.safetensors");
  for (size_t n :
       {size_t(0), size_t(7), size_t(100), good.size() / 2, good.size() - 1}) {
    write_bytes(
        bad, std::vector<uint8_t>(good.begin(), good.begin() + ptrdiff_t(n)));
    auto b = small_model(cpu, 2);
    expect_error<FormatError>([&] { load_checkpoint(bad, *b, nullptr); },
                              {bad});
  }
}

}  // namespace
}  // namespace nascent::train
