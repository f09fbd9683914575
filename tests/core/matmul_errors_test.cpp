// matmul's validation: each error has its type and a message that names the
// op and both operands.
#include <string>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

// Runs matmul(a, b), expecting exception E whose message contains every
// string of `parts`.
template <class E>
void expect_error(const Tensor& a, const Tensor& b,
                  std::initializer_list<std::string> parts) {
  try {
    matmul(a, b);
    ADD_FAILURE() << "matmul of " << a.to_string() << " and " << b.to_string()
                  << " did not throw";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(msg.find(part), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << part << "\"";
    }
  }
}

class MatmulErrors : public ::testing::Test {
 protected:
  Tensor make(const Shape& shape, DType dtype = DType::f32) {
    return zeros(shape, backend_, dtype);
  }
  cpu::Backend backend_;
};

TEST_F(MatmulErrors, InnerDimensionsMustAgree) {
  expect_error<ShapeError>(make({2, 3}), make({4, 5}),
                           {"matmul", "f32[2, 3]", "f32[4, 5]", "3 vs 4"});
  expect_error<ShapeError>(make({3}), make({4}),
                           {"matmul", "f32[3]", "f32[4]", "3 vs 4"});
  expect_error<ShapeError>(make({2, 3}), make({2}),
                           {"matmul", "f32[2, 3]", "f32[2]", "3 vs 2"});
  expect_error<ShapeError>(make({5}), make({2, 4, 3}),
                           {"matmul", "f32[5]", "f32[2, 4, 3]", "5 vs 4"});
}

TEST_F(MatmulErrors, BatchAxesMustBroadcast) {
  expect_error<ShapeError>(
      make({2, 3, 4}), make({5, 4, 6}),
      {"matmul", "f32[2, 3, 4]", "f32[5, 4, 6]", "[2] vs [5]"});
  expect_error<ShapeError>(make({2, 2, 3, 4}), make({3, 4, 6}),
                           {"matmul", "f32[2, 2, 3, 4]", "f32[3, 4, 6]"});
}

TEST_F(MatmulErrors, ScalarsAreRejected) {
  expect_error<ShapeError>(make({}), make({3}),
                           {"matmul", "f32[]", "f32[3]", "1 dimension"});
  expect_error<ShapeError>(make({3, 2}), make({}),
                           {"matmul", "f32[3, 2]", "f32[]"});
}

TEST_F(MatmulErrors, IntegerAndBoolAreRejected) {
  for (DType dt : {DType::i32, DType::i64, DType::u8, DType::boolean}) {
    const std::string n = name(dt);
    expect_error<DTypeError>(make({2, 3}, dt), make({3, 4}),
                             {"matmul", n + "[2, 3]", "f32[3, 4]"});
    expect_error<DTypeError>(make({2, 3}), make({3, 4}, dt),
                             {"matmul", "f32[2, 3]", n + "[3, 4]"});
  }
  // The dtype is checked before the shapes.
  expect_error<DTypeError>(make({2, 3}, DType::i64), make({7, 4}),
                           {"matmul", "i64[2, 3]"});
}

TEST_F(MatmulErrors, TensorsMustShareABackend) {
  cpu::Backend other;
  Tensor b = zeros({3, 4}, other);
  expect_error<BackendError>(make({2, 3}), b, {"matmul"});
  expect_error<ValueError>(make({2, 3}), Tensor(), {"matmul", "undefined"});
}

TEST_F(MatmulErrors, ValidShapesPass) {
  // The checks above must not reject what NumPy accepts.
  EXPECT_EQ(matmul(make({2, 3}), make({3, 4})).shape(), (Shape{2, 4}));
  EXPECT_EQ(matmul(make({3}), make({3})).shape(), (Shape{}));
  EXPECT_EQ(matmul(make({3}), make({2, 3, 4})).shape(), (Shape{2, 4}));
  EXPECT_EQ(matmul(make({2, 1, 5, 3}), make({4, 3, 6})).shape(),
            (Shape{2, 4, 5, 6}));
  EXPECT_EQ(matmul(make({0, 3}), make({3, 4})).shape(), (Shape{0, 4}));
}

}  // namespace
}  // namespace nascent
