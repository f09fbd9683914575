// Errors of the element-wise front-ends: the exception type, and a message
// that names the op and the shapes involved.
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> pieces) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one naming " << *pieces.begin();
  } catch (const E& e) {
    std::string message = e.what();
    for (const std::string& p : pieces) {
      EXPECT_NE(message.find(p), std::string::npos)
          << "'" << message << "' does not mention '" << p << "'";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class ElementwiseErrors : public ::testing::Test {
 protected:
  cpu::Backend backend_;
  Tensor f23_ = zeros({2, 3}, backend_);
  Tensor f4_ = zeros({4}, backend_);
  Tensor b2_ = zeros({2}, backend_, DType::boolean);
};

TEST_F(ElementwiseErrors, BinaryShapesThatDoNotBroadcast) {
  for (const OpInfo& info : op_table()) {
    if (info.family != OpFamily::Binary) continue;
    BinaryOp op = BinaryOp(int(info.op) - int(Op::add));
    ASSERT_EQ(name(op), std::string(info.name));
    expect_error<ShapeError>([&] { binary(op, f23_, f4_); },
                             {info.name, "[2, 3]", "[4]"});
  }
  expect_error<ShapeError>([&] { f23_ + f4_; }, {"add", "[2, 3]", "[4]"});
  Tensor a = zeros({3, 1, 5}, backend_), b = zeros({2, 4}, backend_);
  expect_error<ShapeError>([&] { mul(a, b); },
                           {"mul", "[3, 1, 5]", "[2, 4]", "5 vs 4"});
}

TEST_F(ElementwiseErrors, WhereShapesThatDoNotBroadcast) {
  Tensor c = zeros({2, 3}, backend_, DType::boolean);
  Tensor a = zeros({3}, backend_);
  expect_error<ShapeError>([&] { where(c, a, f4_); },
                           {"where", "bool[2, 3]", "f32[3]", "f32[4]"});
  expect_error<ShapeError>([&] { where(c, f4_, a); },
                           {"where", "bool[2, 3]", "f32[4]", "f32[3]"});
  // The mask may not grow the tensor.
  expect_error<ShapeError>([&] { masked_fill(a, c, 1.0); },
                           {"masked_fill", "bool[2, 3]", "f32[3]"});
}

TEST_F(ElementwiseErrors, BoolArithmetic) {
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul,
                      BinaryOp::maximum, BinaryOp::minimum}) {
    expect_error<DTypeError>([&] { binary(op, b2_, b2_); },
                             {name(op), "bool[2]"});
  }
  expect_error<DTypeError>([&] { b2_ - b2_; }, {"sub", "bool[2]"});
  for (UnaryOp op : {UnaryOp::neg, UnaryOp::abs, UnaryOp::sign, UnaryOp::relu,
                     UnaryOp::square, UnaryOp::clamp, UnaryOp::floor,
                     UnaryOp::ceil, UnaryOp::round}) {
    expect_error<DTypeError>(
        [&] {
          unary(op, b2_, UnaryParams{0, 1});
        },
        {name(op), "bool[2]"});
  }
  expect_error<DTypeError>([&] { clamp(b2_, 0, 1); }, {"clamp", "bool[2]"});
  expect_error<DTypeError>([&] { -b2_; }, {"neg", "bool[2]"});
  // Logic, comparisons, true division and real functions take bool.
  EXPECT_EQ(logical_and(b2_, b2_).dtype(), DType::boolean);
  EXPECT_EQ(eq(b2_, b2_).dtype(), DType::boolean);
  EXPECT_EQ(div(b2_, b2_).dtype(), DType::f32);
  EXPECT_EQ(exp(b2_).dtype(), DType::f32);
  // A bool tensor with an integer scalar computes in i64, as PyTorch.
  EXPECT_EQ(add(b2_, 1).dtype(), DType::i64);
}

TEST_F(ElementwiseErrors, MixedBackends) {
  cpu::Backend other;
  Tensor x = zeros({2, 3}, other);
  expect_error<BackendError>([&] { add(f23_, x); },
                             {"add", "different backends", "f32[2, 3]"});
  expect_error<BackendError>([&] { x* f23_; }, {"mul", "different backends"});
  Tensor c = zeros({2, 3}, other, DType::boolean);
  expect_error<BackendError>([&] { where(c, f23_, f23_); },
                             {"where", "different backends", "bool[2, 3]"});
  expect_error<BackendError>(
      [&] {
        where(zeros({2, 3}, backend_, DType::boolean), f23_, x);
      },
      {"where", "different backends"});
}

TEST_F(ElementwiseErrors, ClampBounds) {
  expect_error<ValueError>([&] { clamp(f23_, 2.0, 1.0); },
                           {"clamp", "2", "1", "f32[2, 3]"});
  expect_error<ValueError>([&] { clamp(f23_, NAN, 1.0); },
                           {"clamp", "nan", "f32[2, 3]"});
  expect_error<ValueError>(
      [&] {
        unary(UnaryOp::clamp, f23_, UnaryParams{3, -3});
      },
      {"clamp", "3", "-3", "f32[2, 3]"});
  // Equal bounds are fine.
  EXPECT_EQ(clamp(f23_, 1.0, 1.0).to_vector<float>()[0], 1.0f);
}

TEST_F(ElementwiseErrors, UndefinedTensor) {
  expect_error<ValueError>([&] { add(Tensor(), f23_); }, {"add", "undefined"});
  expect_error<ValueError>([&] { exp(Tensor()); }, {"exp", "undefined"});
  expect_error<ValueError>([&] { where(Tensor(), f23_, f23_); },
                           {"where", "undefined"});
}

}  // namespace
}  // namespace nascent
