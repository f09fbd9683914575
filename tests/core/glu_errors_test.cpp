// Validation of swiglu and geglu: each bad call raises the right error type
// with a message naming the op and the shapes.
#include <string>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

// Expects fn to throw E with every one of `words` in its message.
template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one with \"" << words[0] << "\"";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& w : words) {
      EXPECT_NE(msg.find(w), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << w << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class GluErrors : public ::testing::TestWithParam<GluOp> {
 protected:
  Tensor make(const Shape& shape, DType dtype = DType::f32) {
    return zeros(shape, cpu_, dtype);
  }
  cpu::Backend cpu_;
};

TEST_P(GluErrors, ShapesMustMatch) {
  const GluOp op = GetParam();
  expect_error<ShapeError>(
      [&] {
        glu(op, make({2, 3}), make({3, 2}));
      },
      {name(op), "differ in shape", "f32[2, 3]", "f32[3, 2]"});
  // Shapes that would broadcast are still rejected: no implicit expand.
  expect_error<ShapeError>(
      [&] {
        glu(op, make({2, 3}), make({1, 3}));
      },
      {name(op), "differ in shape", "f32[1, 3]"});
  expect_error<ShapeError>([&] { glu(op, make({}), make({1})); },
                           {name(op), "f32[]", "f32[1]"});
}

TEST_P(GluErrors, Bool) {
  const GluOp op = GetParam();
  expect_error<DTypeError>(
      [&] { glu(op, make({4}, DType::boolean), make({4})); },
      {name(op), "needs numbers", "bool[4]", "f32[4]"});
  expect_error<DTypeError>(
      [&] { glu(op, make({4}, DType::f16), make({4}, DType::boolean)); },
      {name(op), "needs numbers", "bool[4]"});
}

TEST_P(GluErrors, BackendsMustMatch) {
  const GluOp op = GetParam();
  cpu::Backend other;
  expect_error<BackendError>([&] { glu(op, make({4}), zeros({4}, other)); },
                             {name(op), "different backends", "f32[4]"});
}

TEST(GluNamedErrors, NameTheirOp) {
  cpu::Backend cpu;
  const Tensor a = zeros({2}, cpu), b = zeros({3}, cpu);
  expect_error<ShapeError>([&] { swiglu(a, b); },
                           {"swiglu", "f32[2] and f32[3]"});
  expect_error<ShapeError>([&] { geglu(a, b); },
                           {"geglu", "f32[2] and f32[3]"});
}

INSTANTIATE_TEST_SUITE_P(Ops, GluErrors,
                         ::testing::Values(GluOp::swiglu, GluOp::geglu),
                         [](const ::testing::TestParamInfo<GluOp>& p) {
                           return std::string(name(p.param));
                         });

}  // namespace
}  // namespace nascent
