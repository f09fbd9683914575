// Validation of rope: each bad call raises the right error type with a
// message naming the op, what was expected and the shapes it got.
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
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

class RopeErrors : public ::testing::Test {
 protected:
  Tensor make(const Shape& shape, DType dtype = DType::f32) {
    return zeros(shape, cpu_, dtype);
  }
  Tensor positions(int64_t n, DType dtype = DType::i32) {
    return arange(0, n, 1, cpu_, dtype);
  }
  static RopeParams dims(int64_t d) {
    RopeParams p;
    p.dims = d;
    return p;
  }
  cpu::Backend cpu_;
};

TEST_F(RopeErrors, Rank) {
  expect_error<ShapeError>(
      [&] {
        rope(make({5, 8}), positions(5), {});
      },
      {"rope", "[..., n, heads, head_dim]", "f32[5, 8]"});
  expect_error<ShapeError>([&] { rope(make({8}), int64_t(0), {}); },
                           {"rope", "[..., n, heads, head_dim]", "f32[8]"});
  expect_error<ShapeError>([&] { rope(Tensor(), int64_t(0), {}); },
                           {"rope", "undefined"});
}

TEST_F(RopeErrors, Positions) {
  const Tensor x = make({5, 2, 8});
  expect_error<DTypeError>([&] { rope(x, positions(5, DType::f32), {}); },
                           {"rope", "positions of i32 or i64", "f32[5]"});
  expect_error<DTypeError>([&] { rope(x, make({5}, DType::u8), {}); },
                           {"rope", "positions of i32 or i64", "u8[5]"});
  expect_error<ShapeError>([&] { rope(x, positions(4), {}); },
                           {"rope", "[n] = [5]", "f32[5, 2, 8]", "i32[4]"});
  expect_error<ShapeError>(
      [&] {
        rope(x, positions(5).reshape({5, 1}), {});
      },
      {"rope", "[n] = [5]", "i32[5, 1]"});
  expect_error<ShapeError>([&] { rope(x, make({}, DType::i64), {}); },
                           {"rope", "[n] = [5]", "i64[]"});
}

TEST_F(RopeErrors, Dims) {
  const Tensor x = make({5, 2, 8});
  expect_error<ValueError>(
      [&] { rope(x, positions(5), dims(3)); },
      {"rope", "dims = 3", "even", "head_dim = 8", "f32[5, 2, 8]"});
  expect_error<ValueError>([&] { rope(x, int64_t(0), dims(10)); },
                           {"rope", "dims = 10", "head_dim = 8"});
  expect_error<ValueError>([&] { rope(x, positions(5), dims(-2)); },
                           {"rope", "dims = -2", "head_dim = 8"});
  // An odd head_dim with the default dims (the whole head).
  expect_error<ValueError>(
      [&] {
        rope(make({5, 2, 7}), positions(5), {});
      },
      {"rope", "dims = 0", "head_dim = 7"});
}

TEST_F(RopeErrors, BaseAndScale) {
  const Tensor x = make({5, 2, 8});
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double base : {0.0, -10000.0, inf, nan}) {
    RopeParams p;
    p.base = base;
    expect_error<ValueError>([&] { rope(x, positions(5), p); },
                             {"rope", fmt::format("base = {}", base),
                              "finite and > 0", "f32[5, 2, 8]"});
  }
  for (double scale : {0.0, -1.0, inf, nan}) {
    RopeParams p;
    p.scale = scale;
    expect_error<ValueError>(
        [&] { rope(x, positions(5), p); },
        {"rope", fmt::format("scale = {}", scale), "finite and > 0"});
  }
}

TEST_F(RopeErrors, FreqFactors) {
  const Tensor x = make({5, 2, 8});
  const Tensor whole = make({8});  // [dims], not [dims / 2]
  expect_error<ShapeError>(
      [&] { rope(x, positions(5), {}, &whole); },
      {"rope", "freq_factors", "[dims / 2] = [4]", "f32[8]"});
  const Tensor partial = make({4});  // dims 4 needs [2]
  expect_error<ShapeError>([&] { rope(x, positions(5), dims(4), &partial); },
                           {"rope", "[dims / 2] = [2]", "f32[4]"});
  const Tensor two_d = make({1, 4});
  expect_error<ShapeError>([&] { rope(x, positions(5), {}, &two_d); },
                           {"rope", "[dims / 2] = [4]", "f32[1, 4]"});
  const Tensor ints = make({4}, DType::i32);
  expect_error<DTypeError>([&] { rope(x, positions(5), {}, &ints); },
                           {"rope", "floating freq_factors", "i32[4]"});
}

TEST_F(RopeErrors, IntegerX) {
  for (DType dt : {DType::i32, DType::i64, DType::u8, DType::boolean}) {
    const Tensor x = make({5, 2, 8}, dt);
    expect_error<DTypeError>([&] { rope(x, positions(5), {}); },
                             {"rope", "a floating x", x.to_string()});
  }
}

TEST_F(RopeErrors, BackendsMustMatch) {
  cpu::Backend other;
  const Tensor pos = arange(0, 5, 1, other, DType::i32);
  expect_error<BackendError>(
      [&] {
        rope(make({5, 2, 8}), pos, {});
      },
      {"rope", "different backends", "i32[5]"});
  const Tensor ff = zeros({4}, other);
  expect_error<BackendError>(
      [&] {
        rope(make({5, 2, 8}), positions(5), {}, &ff);
      },
      {"rope", "different backends"});
}

}  // namespace
}  // namespace nascent
