// Validation of scaled_dot_product_attention: each bad call raises the right
// error type with a message naming the op, what was expected and the shapes
// it got.
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

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

class AttentionErrors : public ::testing::Test {
 protected:
  Tensor make(const Shape& shape, DType dtype = DType::f32) {
    return zeros(shape, cpu_, dtype);
  }
  cpu::Backend cpu_;
  // q [2, 4, 3, 8], k and v [2, 2, 5, 8]: valid, for one bad argument.
  Tensor q_ = make({2, 4, 3, 8});
  Tensor k_ = make({2, 2, 5, 8});
  Tensor v_ = make({2, 2, 5, 8});
};

TEST_F(AttentionErrors, Ranks) {
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(make({4, 3, 8}), k_, v_);
      },
      {kOp, "q [B, Hq, Lq, D]", "f32[4, 3, 8]", "f32[2, 2, 5, 8]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, make({2, 2, 5}), v_);
      },
      {kOp, "k [B, Hkv, Lk, D]", "f32[2, 2, 5]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, k_, make({1, 2, 2, 5, 8}));
      },
      {kOp, "v [B, Hkv, Lk, Dv]", "f32[1, 2, 2, 5, 8]"});
}

TEST_F(AttentionErrors, MismatchedShapes) {
  // Batch of k, batch of v, D of k, Lk of v, heads of v.
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, make({3, 2, 5, 8}), v_);
      },
      {kOp, "do not fit", "f32[2, 4, 3, 8]", "f32[3, 2, 5, 8]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, k_, make({1, 2, 5, 8}));
      },
      {kOp, "do not fit", "f32[1, 2, 5, 8]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, make({2, 2, 5, 7}), v_);
      },
      {kOp, "do not fit", "f32[2, 2, 5, 7]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, k_, make({2, 2, 6, 8}));
      },
      {kOp, "do not fit", "f32[2, 2, 6, 8]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, k_, make({2, 1, 5, 8}));
      },
      {kOp, "do not fit", "f32[2, 1, 5, 8]"});
}

TEST_F(AttentionErrors, HeadsMustGroup) {
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, make({2, 3, 5, 8}),
                                     make({2, 3, 5, 8}));
      },
      {kOp, "4 query heads are not a multiple of 3 key/value heads",
       "f32[2, 3, 5, 8]"});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q_, make({2, 0, 5, 8}),
                                     make({2, 0, 5, 8}));
      },
      {kOp, "not a multiple of 0 key/value heads"});
  // More key heads than query heads.
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(make({2, 2, 3, 8}), make({2, 4, 5, 8}),
                                     make({2, 4, 5, 8}));
      },
      {kOp, "2 query heads are not a multiple of 4"});
}

TEST_F(AttentionErrors, CausalNeedsKeysForEveryQuery) {
  AttentionParams p;
  p.causal = true;
  expect_error<ValueError>(
      [&] {
        scaled_dot_product_attention(make({2, 4, 6, 8}), k_, v_, p);
      },
      {kOp, "causal", "6 queries over 5 keys", "f32[2, 4, 6, 8]"});
  // Without causal, more queries than keys is fine.
  p.causal = false;
  EXPECT_EQ(scaled_dot_product_attention(make({2, 4, 6, 8}), k_, v_, p).shape(),
            (Shape{2, 4, 6, 8}));
}

TEST_F(AttentionErrors, NoKeys) {
  expect_error<ValueError>(
      [&] {
        scaled_dot_product_attention(q_, make({2, 2, 0, 8}),
                                     make({2, 2, 0, 8}));
      },
      {kOp, "no keys", "f32[2, 2, 0, 8]"});
  // No queries and no keys: an empty result, not an error.
  EXPECT_EQ(scaled_dot_product_attention(make({2, 4, 0, 8}), make({2, 2, 0, 8}),
                                         make({2, 2, 0, 8}))
                .shape(),
            (Shape{2, 4, 0, 8}));
}

TEST_F(AttentionErrors, Scale) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double scale : {-1.0, -inf, inf, nan}) {
    AttentionParams p;
    p.scale = scale;
    expect_error<ValueError>(
        [&] { scaled_dot_product_attention(q_, k_, v_, p); },
        {kOp, fmt::format("scale = {}", scale), "finite and >= 0",
         "f32[2, 4, 3, 8]"});
  }
}

TEST_F(AttentionErrors, MaskShape) {
  // Scores are [2, 4, 3, 5]: a mask of 4 keys, or of 3 heads, does not
  // broadcast; one of 5 dimensions broadcasts to more than the scores.
  for (const Shape& s :
       {Shape{4}, Shape{3, 3, 5}, Shape{2, 4, 3, 5, 1}, Shape{2, 2, 4, 3, 5}}) {
    const Tensor mask = make(s);
    expect_error<ShapeError>(
        [&] { scaled_dot_product_attention(q_, k_, v_, {}, &mask); },
        {kOp, to_string(s)});
  }
  const Tensor big = make({3, 1, 1, 1, 5});
  expect_error<ShapeError>(
      [&] { scaled_dot_product_attention(q_, k_, v_, {}, &big); },
      {kOp, "[B, Hq, Lq, Lk] = [2, 4, 3, 5]", "f32[3, 1, 1, 1, 5]"});
}

TEST_F(AttentionErrors, MaskDtype) {
  for (DType dt : {DType::i32, DType::i64, DType::u8}) {
    const Tensor mask = make({3, 5}, dt);
    expect_error<DTypeError>(
        [&] { scaled_dot_product_attention(q_, k_, v_, {}, &mask); },
        {kOp, "bool or floating", mask.to_string()});
  }
}

TEST_F(AttentionErrors, IntegerOperands) {
  expect_error<DTypeError>(
      [&] {
        scaled_dot_product_attention(make({2, 4, 3, 8}, DType::i32),
                                     make({2, 2, 5, 8}, DType::i32),
                                     make({2, 2, 5, 8}, DType::i32));
      },
      {kOp, "must be floating", "i32[2, 4, 3, 8]"});
}

TEST_F(AttentionErrors, BackendsMustMatch) {
  cpu::Backend other;
  expect_error<BackendError>(
      [&] {
        scaled_dot_product_attention(q_, zeros({2, 2, 5, 8}, other), v_);
      },
      {kOp, "different backends"});
  const Tensor mask = zeros({3, 5}, other);
  expect_error<BackendError>(
      [&] { scaled_dot_product_attention(q_, k_, v_, {}, &mask); },
      {kOp, "different backends", "f32[3, 5]"});
}

}  // namespace
}  // namespace nascent
