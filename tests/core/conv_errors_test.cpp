// Validation of conv2d, pooling and their backwards: each bad call raises the
// right error type with a message naming the op and the shapes involved.
#include <string>

#include <gtest/gtest.h>

#include "nascent/nascent.h"

namespace nascent {
namespace {

// Runs fn, expects an exception of type E whose message contains every
// string of `parts`.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << *parts.begin();
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << p << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

Conv2dParams groups(int64_t g) {
  Conv2dParams p;
  p.groups = g;
  return p;
}

class ConvErrors : public ::testing::Test {
 protected:
  Backend& cpu = default_backend();
  Tensor x = zeros({2, 4, 6, 6}, cpu);
  Tensor w = zeros({3, 4, 3, 3}, cpu);
};

TEST_F(ConvErrors, RanksMustBeFour) {
  expect_error<ShapeError>(
      [&] {
        conv2d(zeros({4, 6, 6}, cpu), w, nullptr);
      },
      {"conv2d", "f32[4, 6, 6]", "f32[3, 4, 3, 3]"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({3, 4, 3}, cpu), nullptr);
      },
      {"conv2d", "f32[3, 4, 3]"});
}

TEST_F(ConvErrors, ChannelsAndGroups) {
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({3, 2, 3, 3}, cpu), nullptr, groups(3));
      },
      {"conv2d", "divisible by groups 3", "f32[2, 4, 6, 6]"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({3, 3, 3, 3}, cpu), nullptr);
      },
      {"conv2d", "f32[3, 3, 3, 3]", "input channels"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({4, 4, 3, 3}, cpu), nullptr, groups(2));
      },
      {"conv2d", "C / groups = 4 / 2 = 2", "f32[4, 4, 3, 3]"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({0, 4, 3, 3}, cpu), nullptr);
      },
      {"conv2d", "f32[0, 4, 3, 3]"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, zeros({3, 4, 0, 3}, cpu), nullptr);
      },
      {"conv2d", "f32[3, 4, 0, 3]"});
}

TEST_F(ConvErrors, Bias) {
  Tensor b = zeros({4}, cpu);
  expect_error<ShapeError>([&] { conv2d(x, w, &b); },
                           {"conv2d", "bias", "[3]", "f32[4]"});
  Tensor b64 = zeros({3}, cpu, DType::f64);
  expect_error<DTypeError>([&] { conv2d(x, w, &b64); }, {"conv2d", "f64[3]"});
}

TEST_F(ConvErrors, KernelLargerThanPaddedInput) {
  Conv2dParams p;
  p.dilation[1] = 3;  // Extent 7 over a width of 6.
  expect_error<ShapeError>([&] { conv2d(x, w, nullptr, p); },
                           {"conv2d", "larger than the padded input",
                            "f32[2, 4, 6, 6]", "dilation [1, 3]"});
  p.padding[1] = 1;  // 6 + 2 >= 7 fits.
  EXPECT_EQ(conv2d(x, w, nullptr, p).shape(), (Shape{2, 3, 4, 2}));
}

TEST_F(ConvErrors, BadParams) {
  for (int field = 0; field < 4; ++field) {
    Conv2dParams p;
    if (field == 0) p.stride[1] = 0;
    if (field == 1) p.dilation[0] = -1;
    if (field == 2) p.padding[0] = -1;
    if (field == 3) p.groups = 0;
    expect_error<ValueError>([&] { conv2d(x, w, nullptr, p); },
                             {"conv2d", "stride"});
    expect_error<ValueError>(
        [&] {
          conv2d_backward_input(zeros({2, 3, 4, 4}, cpu), w, x.shape(), p);
        },
        {"conv2d_backward_input"});
    expect_error<ValueError>(
        [&] {
          conv2d_backward_weight(x, zeros({2, 3, 4, 4}, cpu), w.shape(), p);
        },
        {"conv2d_backward_weight"});
  }
}

TEST_F(ConvErrors, DTypes) {
  Tensor xi = zeros({2, 4, 6, 6}, cpu, DType::i32);
  Tensor wi = zeros({3, 4, 3, 3}, cpu, DType::i32);
  expect_error<DTypeError>([&] { conv2d(xi, wi, nullptr); },
                           {"conv2d", "floating", "i32[2, 4, 6, 6]"});
  expect_error<DTypeError>(
      [&] {
        conv2d(x, zeros({3, 4, 3, 3}, cpu, DType::f64), nullptr);
      },
      {"conv2d", "f32[2, 4, 6, 6]", "f64[3, 4, 3, 3]"});
  Tensor g = zeros({2, 3, 4, 4}, cpu, DType::f64);
  expect_error<DTypeError>([&] { conv2d_backward_input(g, w, x.shape()); },
                           {"conv2d_backward_input", "f64[2, 3, 4, 4]"});
  expect_error<DTypeError>([&] { conv2d_backward_weight(x, g, w.shape()); },
                           {"conv2d_backward_weight", "f64[2, 3, 4, 4]"});
}

TEST_F(ConvErrors, BackwardShapes) {
  Tensor g = zeros({2, 3, 5, 4}, cpu);
  expect_error<ShapeError>(
      [&] { conv2d_backward_input(g, w, x.shape()); },
      {"conv2d_backward_input", "[2, 3, 4, 4]", "f32[2, 3, 5, 4]"});
  expect_error<ShapeError>(
      [&] { conv2d_backward_weight(x, g, w.shape()); },
      {"conv2d_backward_weight", "[2, 3, 4, 4]", "f32[2, 3, 5, 4]"});
  expect_error<ShapeError>(
      [&] {
        conv2d_backward_input(zeros({2, 3, 4, 4}, cpu), w, {4, 6, 6});
      },
      {"conv2d_backward_input", "[4, 6, 6]"});
  expect_error<ValueError>(
      [&] {
        conv2d_backward_input(zeros({2, 3, 4, 4}, cpu), w, {2, -4, 6, 6});
      },
      {"conv2d_backward_input"});
  expect_error<ShapeError>(
      [&] {
        conv2d_backward_weight(x, zeros({2, 3, 4, 4}, cpu), {3, 2, 3, 3});
      },
      {"conv2d_backward_weight", "[3, 2, 3, 3]"});
}

Pool2dParams pool(int64_t k, int64_t s, int64_t pad) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = k;
  p.stride[0] = p.stride[1] = s;
  p.padding[0] = p.padding[1] = pad;
  return p;
}

TEST_F(ConvErrors, PoolParams) {
  expect_error<ValueError>([&] { max_pool2d(x, pool(2, 2, 2)); },
                           {"max_pool2d", "half the kernel", "padding [2, 2]"});
  expect_error<ValueError>([&] { avg_pool2d(x, pool(3, 1, 2)); },
                           {"avg_pool2d", "half the kernel"});
  expect_error<ValueError>([&] { max_pool2d(x, pool(0, 1, 0)); },
                           {"max_pool2d", "kernel [0, 0]"});
  expect_error<ValueError>([&] { avg_pool2d(x, pool(2, 0, 0)); },
                           {"avg_pool2d", "stride [0, 0]"});
  expect_error<ValueError>([&] { max_pool2d(x, pool(2, 1, -1)); },
                           {"max_pool2d", "padding [-1, -1]"});
}

TEST_F(ConvErrors, PoolShapes) {
  expect_error<ShapeError>(
      [&] {
        max_pool2d(zeros({4, 6, 6}, cpu), pool(2, 2, 0));
      },
      {"max_pool2d", "f32[4, 6, 6]"});
  expect_error<ShapeError>(
      [&] {
        avg_pool2d(zeros({2, 0, 6, 6}, cpu), pool(2, 2, 0));
      },
      {"avg_pool2d", "f32[2, 0, 6, 6]"});
  expect_error<ShapeError>(
      [&] { max_pool2d(x, pool(7, 1, 0)); },
      {"max_pool2d", "larger than the padded input", "f32[2, 4, 6, 6]"});
  expect_error<DTypeError>(
      [&] {
        max_pool2d(zeros({2, 4, 6, 6}, cpu, DType::i64), pool(2, 2, 0));
      },
      {"max_pool2d", "i64[2, 4, 6, 6]"});
}

TEST_F(ConvErrors, PoolBackward) {
  Pool2dParams p = pool(2, 2, 0);
  // Plain variables: clang 14 cannot capture structured bindings.
  const auto forward = max_pool2d_with_indices(x, p);
  const Tensor y = forward.first, idx = forward.second;
  Tensor g = zeros({2, 4, 3, 2}, cpu);
  expect_error<ShapeError>(
      [&] { max_pool2d_backward(g, idx, x.shape(), p); },
      {"max_pool2d_backward", "[2, 4, 3, 3]", "f32[2, 4, 3, 2]"});
  expect_error<ShapeError>([&] { avg_pool2d_backward(g, x.shape(), p); },
                           {"avg_pool2d_backward", "f32[2, 4, 3, 2]"});
  expect_error<ShapeError>(
      [&] { max_pool2d_backward(y, idx.cast(DType::i32), x.shape(), p); },
      {"max_pool2d_backward", "i32[2, 4, 3, 3]"});
  expect_error<DTypeError>([&] { avg_pool2d_backward(idx, x.shape(), p); },
                           {"avg_pool2d_backward", "i64[2, 4, 3, 3]"});
  // An index outside its 6x6 plane is refused, never written.
  Tensor bad = full({2, 4, 3, 3}, 36, cpu, DType::i64);
  expect_error<ValueError>([&] { max_pool2d_backward(y, bad, x.shape(), p); },
                           {"max_pool2d_backward", "6x6", "[2, 4, 6, 6]"});
  Tensor negative = full({2, 4, 3, 3}, -1, cpu, DType::i64);
  expect_error<ValueError>(
      [&] { max_pool2d_backward(y, negative, x.shape(), p); },
      {"max_pool2d_backward"});
}

}  // namespace
}  // namespace nascent
