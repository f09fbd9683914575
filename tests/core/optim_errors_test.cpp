// Validation of sgd_update and adam_update: each bad call raises the right
// error type with a message naming the op and the tensors, before anything
// is written.
#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/nascent.h"

namespace nascent {
namespace {

using nascent::testing::expect_error;

class OptimErrors : public ::testing::Test {
 protected:
  Backend& cpu = default_backend();
  Tensor p = ones({4, 3}, cpu);
  Tensor g = ones({4, 3}, cpu);
  Tensor b = zeros({4, 3}, cpu);
  OptimParams sgd() {
    OptimParams o;
    o.lr = 0.1;
    o.momentum = 0.9;
    return o;
  }
};

TEST_F(OptimErrors, ShapesDTypesLayouts) {
  expect_error<ShapeError>(
      [&] {
        sgd_update(p, ones({3, 4}, cpu), &b, sgd());
      },
      {"sgd_update", "shapes differ", "param f32[4, 3]", "grad f32[3, 4]"});
  expect_error<DTypeError>(
      [&] { sgd_update(p, g.cast(DType::f64), &b, sgd()); },
      {"sgd_update", "dtypes differ", "grad f64[4, 3]"});
  expect_error<DTypeError>(
      [&] {
        Tensor i = zeros({4, 3}, cpu, DType::i32);
        sgd_update(i, i, nullptr, OptimParams{});
      },
      {"sgd_update", "floating", "i32[4, 3]"});
  expect_error<ValueError>(
      [&] {
        Tensor t = ones({3, 4}, cpu).transpose(0, 1);
        sgd_update(t, g, &b, sgd());
      },
      {"sgd_update", "parameter must be contiguous"});
  expect_error<ValueError>(
      [&] {
        Tensor t = zeros({3, 4}, cpu).transpose(0, 1);
        sgd_update(p, g, &t, sgd());
      },
      {"sgd_update", "state must be contiguous"});
  expect_error<ValueError>([&] { sgd_update(p, g, &p, sgd()); },
                           {"sgd_update", "shares storage with the parameter"});
  expect_error<ValueError>(
      [&] { sgd_update(p, g, nullptr, sgd()); },
      {"sgd_update", "momentum 0.9 needs a momentum buffer"});
  OptimParams bad = sgd();
  bad.lr = -1;
  expect_error<ValueError>([&] { sgd_update(p, g, &b, bad); },
                           {"sgd_update", "lr = -1"});
  cpu::Backend other;
  expect_error<BackendError>(
      [&] {
        sgd_update(p, ones({4, 3}, other), &b, sgd());
      },
      {"sgd_update"});
  // Nothing was written by the failed calls.
  EXPECT_EQ(p.to_vector<float>(), std::vector<float>(12, 1.0f));
}

TEST_F(OptimErrors, AdamArguments) {
  Tensor m = zeros({4, 3}, cpu), v = zeros({4, 3}, cpu);
  OptimParams o;
  o.lr = 0.1;  // (The default 0 would leave the parameter as it is.)
  o.beta1 = 1.0;
  expect_error<ValueError>([&] { adam_update(p, g, m, v, o); },
                           {"adam_update", "betas (1, 0.999)"});
  o.beta1 = 0.9;
  o.step = 0;
  expect_error<ValueError>([&] { adam_update(p, g, m, v, o); },
                           {"adam_update", "step 0"});
  o.step = 1;
  expect_error<ValueError>([&] { adam_update(p, g, m, m, o); },
                           {"adam_update", "share storage"});
  expect_error<ShapeError>([&] { adam_update(p, g, m, zeros({12}, cpu), o); },
                           {"adam_update", "shapes differ", "state f32[12]"});
  adam_update(p, g, m, v, o);  // A valid call changes the parameter.
  EXPECT_NE(p.to_vector<float>(), std::vector<float>(12, 1.0f));
}

}  // namespace
}  // namespace nascent
