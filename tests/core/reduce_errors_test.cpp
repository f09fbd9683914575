// Front-end validation of the reductions, cumsum, softmax and the norms: the
// exception type, and a message that names the op and the shapes.
#include <string>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

// Runs fn, expects exception E whose message contains every one of `parts`.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << *parts.begin();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << p << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class ReduceErrors : public ::testing::Test {
 protected:
  cpu::Backend cpu_;
  Tensor x_ = zeros({2, 3}, cpu_);
};

TEST_F(ReduceErrors, AxisOutOfRange) {
  expect_error<ValueError>([&] { sum(x_, {2}); }, {"sum", "axis 2", "2"});
  expect_error<ValueError>([&] { mean(x_, {-3}); }, {"mean", "axis -3"});
  expect_error<ValueError>([&] { var(x_, {5}); }, {"var", "axis 5"});
  expect_error<ValueError>([&] { nascent::std(x_, {5}); }, {"std", "axis 5"});
  expect_error<ValueError>([&] { argmax(x_, 2); }, {"argmax", "axis 2"});
  expect_error<ValueError>([&] { argmin(x_, -3); }, {"argmin", "axis -3"});
  expect_error<ValueError>([&] { cumsum(x_, 2); }, {"cumsum", "axis 2"});
  expect_error<ValueError>([&] { logsumexp(x_, {7}); },
                           {"logsumexp", "axis 7"});
}

TEST_F(ReduceErrors, RepeatedAxis) {
  expect_error<ValueError>([&] { max(x_, {1, -1}); }, {"max", "repeated"});
  expect_error<ValueError>([&] { prod(x_, {0, 0}); }, {"prod", "repeated"});
}

TEST_F(ReduceErrors, EmptyAxisHasNoExtreme) {
  Tensor e = zeros({0, 3}, cpu_);
  expect_error<ValueError>([&] { max(e, {0}); }, {"max", "f32[0, 3]", "0"});
  expect_error<ValueError>([&] { min(e); }, {"min", "f32[0, 3]"});
  expect_error<ValueError>([&] { argmax(e, 0); }, {"argmax", "f32[0, 3]"});
  expect_error<ValueError>([&] { argmin(e); }, {"argmin", "f32[0, 3]"});
  // Over the non-empty axis the result is simply empty.
  EXPECT_EQ(max(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(argmax(e, 1, true).shape(), (Shape{0, 1}));
}

TEST_F(ReduceErrors, SoftmaxAxis) {
  expect_error<ValueError>([&] { softmax(x_, 2); }, {"softmax", "axis 2"});
  expect_error<ValueError>([&] { log_softmax(x_, -3); },
                           {"log_softmax", "axis -3"});
}

TEST_F(ReduceErrors, NormShapes) {
  Tensor w = ones({4}, cpu_);
  expect_error<ShapeError>([&] { layer_norm(x_, &w, nullptr); },
                           {"layer_norm", "weight", "f32[4]", "f32[2, 3]"});
  Tensor b = ones({2, 3}, cpu_);
  Tensor w3 = ones({3}, cpu_);
  expect_error<ShapeError>([&] { layer_norm(x_, &w3, &b); },
                           {"layer_norm", "bias", "f32[2, 3]", "[3]"});
  expect_error<ShapeError>([&] { rms_norm(x_, &w); },
                           {"rms_norm", "f32[4]", "f32[2, 3]"});
  expect_error<ValueError>([&] { layer_norm(x_, nullptr, nullptr, 1e-5, 3); },
                           {"layer_norm", "normalized_ndim", "f32[2, 3]"});
  expect_error<ValueError>([&] { rms_norm(x_, nullptr, 1e-6, 0); },
                           {"rms_norm", "normalized_ndim"});
  expect_error<ValueError>([&] { rms_norm(x_, nullptr, -1.0); },
                           {"rms_norm", "eps"});
  expect_error<ValueError>(
      [&] {
        layer_norm(x_, nullptr, nullptr,
                   std::numeric_limits<double>::quiet_NaN());
      },
      {"layer_norm", "eps"});
}

TEST_F(ReduceErrors, BackendsMustAgree) {
  cpu::Backend other;
  Tensor w = ones({3}, other);
  expect_error<BackendError>([&] { layer_norm(x_, &w, nullptr); },
                             {"layer_norm", "different backends"});
  expect_error<BackendError>([&] { rms_norm(x_, &w); },
                             {"rms_norm", "different backends"});
}

TEST_F(ReduceErrors, UndefinedInput) {
  Tensor undefined;
  expect_error<ValueError>([&] { sum(undefined); }, {"sum", "undefined"});
  expect_error<ValueError>([&] { softmax(undefined); },
                           {"softmax", "undefined"});
  expect_error<ValueError>([&] { cumsum(undefined, 0); },
                           {"cumsum", "undefined"});
}

}  // namespace
}  // namespace nascent
