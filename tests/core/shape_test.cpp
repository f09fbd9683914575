// Shape validation (core/shape.cpp): element counts and contiguous strides
// that overflow int64 are rejected for every caller, with or without a zero
// dimension. Guards issue 16: [0, 2^32, 2^32] passed checked_numel (it holds
// no element) and then overflowed in contiguous_strides.
#include "nascent/core/shape.h"

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

using nascent::testing::expect_error;

constexpr int64_t k2p31 = int64_t(1) << 31;
constexpr int64_t k2p32 = int64_t(1) << 32;

cpu::Backend& cpu_backend() {
  static cpu::Backend backend;
  return backend;
}

TEST(Shape, CheckedNumelCountsAndRejectsOverflow) {
  EXPECT_EQ(checked_numel({}, "t"), 1);
  EXPECT_EQ(checked_numel({2, 3, 4}, "t"), 24);
  EXPECT_EQ(checked_numel({0, k2p31, k2p31}, "t"), 0);  // Strides 2^62 fit.
  EXPECT_EQ(checked_numel({INT64_MAX}, "t"), INT64_MAX);
  expect_error<ValueError>(
      [] {
        checked_numel({k2p32, k2p32}, "op1");
      },
      {"op1", "[4294967296, 4294967296]", "elements"});
  // No element, but the stride of the first axis would be 2^64.
  expect_error<ValueError>(
      [] {
        checked_numel({0, k2p32, k2p32}, "op2");
      },
      {"op2", "[0, 4294967296, 4294967296]", "strides"});
  expect_error<ValueError>(
      [] {
        checked_numel({k2p32, 0, k2p32}, "op3");
      },
      {"op3", "strides"});
  // The zero after the overflow is seen too.
  expect_error<ValueError>(
      [] {
        checked_numel({k2p32, k2p32, 0}, "op5");
      },
      {"op5", "strides"});
  expect_error<ValueError>(
      [] {
        checked_numel({2, -1}, "op4");
      },
      {"op4", "negative"});
}

TEST(Shape, ContiguousStridesNeverOverflow) {
  EXPECT_EQ(contiguous_strides({}), Strides{});
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Strides{3, 3, 1}));
  // The product past the first axis is no stride: [2^62, 4] has strides
  // [4, 1] although it has 2^64 elements.
  EXPECT_EQ(contiguous_strides({int64_t(1) << 62, 4}), (Strides{4, 1}));
  EXPECT_EQ(contiguous_strides({0, k2p31, k2p31}),
            (Strides{int64_t(1) << 62, k2p31, 1}));
  expect_error<ValueError>(
      [] {
        contiguous_strides({1, k2p32, k2p32});
      },
      {"contiguous_strides", "strides"});
}

TEST(Shape, FitsInt64ChecksDimensionsBeforeConversion) {
  EXPECT_TRUE(shape_fits_int64(std::vector<uint64_t>{}));
  EXPECT_TRUE(shape_fits_int64(std::vector<uint64_t>{uint64_t(INT64_MAX)}));
  EXPECT_TRUE(shape_fits_int64(std::vector<uint64_t>{0, 1u << 31, 1u << 31}));
  EXPECT_FALSE(shape_fits_int64(std::vector<uint64_t>{uint64_t(1) << 63}));
  EXPECT_FALSE(shape_fits_int64(std::vector<uint64_t>{0, uint64_t(1) << 63}));
  EXPECT_FALSE(shape_fits_int64(
      std::vector<uint64_t>{0, uint64_t(k2p32), uint64_t(k2p32)}));
  EXPECT_FALSE(
      shape_fits_int64(std::vector<uint64_t>{uint64_t(INT64_MAX), 2, 0}));
  // The product may be exactly INT64_MAX, not beyond.
  EXPECT_TRUE(shape_fits_int64(
      std::vector<uint64_t>{7, 7, 73, 127, 337, 92737, 649657}));  // 2^63 - 1.
  EXPECT_FALSE(shape_fits_int64(std::vector<uint64_t>{uint64_t(1) << 62, 2}));
}

TEST(Shape, EveryCreatorRejectsOverflowingStrides) {
  Backend& cpu = cpu_backend();
  const Shape big = {0, k2p32, k2p32};
  unsigned char byte = 0;
  expect_error<ValueError>([&] { from_data(&byte, big, DType::u8, cpu); },
                           {"from_data", "strides"});
  expect_error<ValueError>([&] { Tensor::empty(big, DType::f32, cpu); },
                           {"empty", "strides"});
  expect_error<ValueError>([&] { zeros(big, cpu); }, {"strides"});
  Tensor none = zeros({0}, cpu);
  expect_error<ValueError>([&] { none.reshape(big); }, {"reshape"});
  // A zero-element shape whose strides fit is still fine.
  Tensor ok = zeros({0, k2p31, k2p31}, cpu);
  EXPECT_EQ(ok.numel(), 0);
  EXPECT_EQ(ok.strides(), (Strides{int64_t(1) << 62, k2p31, 1}));
}

TEST(Shape, ViewsWhoseExtentOverflowsAreRejected) {
  Tensor x = zeros({4}, cpu_backend());
  expect_error<ShapeError>([&] { x.as_strided({k2p32}, {k2p32}, 0); },
                           {"Tensor::make", "beyond int64"});
  expect_error<ShapeError>([&] { x.as_strided({2}, {INT64_MAX}, 3); },
                           {"beyond int64"});
  expect_error<ShapeError>(
      [&] { x.as_strided({3}, {-(int64_t(1) << 62) - 1}, 0); },
      {"beyond int64"});
}

}  // namespace
}  // namespace nascent
