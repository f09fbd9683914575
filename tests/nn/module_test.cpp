// Module: nested names, state dicts, train/eval, persistence of parameters,
// and the errors of load_state_dict.
#include "nascent/nn/module.h"

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/nascent.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/norm.h"

namespace nascent::nn {
namespace {

using nascent::testing::expect_error;

// A module with a parameter, a buffer and two levels of children.
class Block final : public Module {
 public:
  Block(Backend& backend, Generator& gen) {
    scale = register_parameter("scale", ones({3}, backend));
    count = register_buffer("count", zeros({}, backend, DType::i64));
    inner = register_module(
        "inner",
        std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
            std::make_shared<Linear>(3, 4, backend, gen),
            std::make_shared<ReLU>(),
            std::make_shared<BatchNorm2d>(2, backend)}));
  }
  std::string describe() const override { return "Block"; }
  Tensor forward(const Tensor& x) override { return x * *scale; }
  using Module::register_buffer;
  using Module::register_parameter;

  Tensor* scale;
  Tensor* count;
  std::shared_ptr<Sequential> inner;
};

class Modules : public ::testing::Test {
 protected:
  cpu::Backend cpu;
  Generator gen{5};
};

TEST_F(Modules, NamesNestWithDotsInRegistrationOrder) {
  Block b(cpu, gen);
  std::vector<std::string> params, buffers;
  for (const NamedTensor& p : b.named_parameters()) params.push_back(p.name);
  for (const NamedTensor& p : b.named_buffers()) buffers.push_back(p.name);
  EXPECT_EQ(params,
            (std::vector<std::string>{"scale", "inner.0.weight", "inner.0.bias",
                                      "inner.2.weight", "inner.2.bias"}));
  EXPECT_EQ(buffers, (std::vector<std::string>{"count", "inner.2.running_mean",
                                               "inner.2.running_var",
                                               "inner.2.num_batches_tracked"}));
  EXPECT_EQ(b.num_parameters(), 3 + 12 + 4 + 2 + 2);
  EXPECT_EQ(b.parameters()[1], b.named_parameters()[1].tensor);
  EXPECT_EQ(b.state_dict().size(), 9u);
  std::string s = b.summary();
  EXPECT_NE(s.find("Block  [3 parameters]"), std::string::npos) << s;
  EXPECT_NE(s.find("    0: Linear(3, 4)  [16 parameters]"), std::string::npos)
      << s;
  EXPECT_NE(s.find("23 parameters in all"), std::string::npos) << s;
}

TEST_F(Modules, ParametersAndBuffersArePersistent) {
  Block b(cpu, gen);
  MemoryStats before = cpu.memory_stats();
  for (const NamedTensor& p : b.named_parameters()) {
    EXPECT_TRUE(cpu.is_persistent(*p.tensor)) << p.name;
  }
  for (const NamedTensor& p : b.named_buffers()) {
    EXPECT_TRUE(cpu.is_persistent(*p.tensor)) << p.name;
  }
  EXPECT_GE(before.persistent_bytes, size_t(25 * 4));
  Tensor* w = b.named_parameters()[1].tensor;
  set_value(*w, zeros({4, 3}, cpu));
  EXPECT_TRUE(cpu.is_persistent(*w));
  expect_error<ShapeError>(
      [&] {
        set_value(*w, zeros({3, 4}, cpu));
      },
      {"set_value", "f32[3, 4]", "f32[4, 3]"});
  expect_error<DTypeError>(
      [&] {
        set_value(*w, zeros({4, 3}, cpu, DType::f64));
      },
      {"set_value", "f64[4, 3]"});
}

TEST_F(Modules, TrainAndEvalReachEveryChild) {
  Block b(cpu, gen);
  EXPECT_TRUE(b.is_training());
  b.eval();
  EXPECT_FALSE(b.is_training());
  EXPECT_FALSE((*b.inner)[2].is_training());
  b.train();
  EXPECT_TRUE((*b.inner)[0].is_training());
  // A child added to a module in eval mode takes its mode.
  Sequential s;
  s.eval();
  s.add(std::make_shared<ReLU>());
  EXPECT_FALSE(s[0].is_training());
}

TEST_F(Modules, StateDictRoundTripsIntoAFreshModule) {
  Block a(cpu, gen);
  Generator other(99);
  Block b(cpu, other);
  set_value(*a.count, full({}, int64_t(7), cpu, DType::i64));
  std::map<std::string, Tensor> state = a.state_dict();
  b.load_state_dict(state);
  for (const auto& [name, t] : b.state_dict()) {
    EXPECT_EQ(t.to_vector<double>(), state.at(name).to_vector<double>())
        << name;
    // Loaded values are copies: changing the source leaves them alone.
    EXPECT_NE(t.data(), state.at(name).data()) << name;
  }
  // Values of another dtype are converted to the parameter's.
  state["scale"] = full({3}, 2.5, cpu, DType::f64);
  b.load_state_dict(state);
  EXPECT_EQ(b.scale->dtype(), DType::f32);
  EXPECT_EQ(b.scale->to_vector<float>(), (std::vector<float>{2.5, 2.5, 2.5}));
}

TEST_F(Modules, LoadStateDictErrorsNameTheEntriesAndChangeNothing) {
  Block a(cpu, gen);
  std::map<std::string, Tensor> state = a.state_dict();
  std::vector<float> scale_before = a.scale->to_vector<float>();

  auto missing = state;
  missing.erase("inner.0.bias");
  expect_error<ValueError>([&] { a.load_state_dict(missing); },
                           {"load_state_dict", "missing [inner.0.bias]"});
  auto extra = state;
  extra["inner.9.weight"] = zeros({1}, cpu);
  extra["scale"] = zeros({3}, cpu);
  expect_error<ValueError>([&] { a.load_state_dict(extra); },
                           {"unexpected [inner.9.weight]"});
  EXPECT_EQ(a.scale->to_vector<float>(), scale_before);
  // Not strict: the extra entry is ignored, the rest loaded.
  a.load_state_dict(extra, false);
  EXPECT_EQ(a.scale->to_vector<float>(), (std::vector<float>{0, 0, 0}));

  auto wrong = state;
  wrong["inner.0.weight"] = zeros({3, 4}, cpu);
  expect_error<ShapeError>(
      [&] { a.load_state_dict(wrong); },
      {"\"inner.0.weight\"", "f32[3, 4] in the state", "f32[4, 3]"});
}

TEST_F(Modules, RegistrationErrors) {
  Block b(cpu, gen);
  expect_error<ValueError>(
      [&] { b.register_parameter("scale", ones({1}, cpu)); },
      {"\"scale\" is registered twice"});
  expect_error<ValueError>([&] { b.register_buffer("inner", ones({1}, cpu)); },
                           {"\"inner\" is registered twice"});
  expect_error<ValueError>([&] { b.register_parameter("a.b", ones({1}, cpu)); },
                           {"\"a.b\" cannot name"});
  expect_error<ValueError>([&] { b.register_parameter("u", Tensor()); },
                           {"parameter \"u\" is undefined"});
}

}  // namespace
}  // namespace nascent::nn
