// assign (core/ops/copy.cpp): writes into views, with broadcasting, dtype
// conversion, sources that share the destination's storage, and the errors.
#include <numeric>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

cpu::Backend& cpu_backend() {
  static cpu::Backend backend;
  return backend;
}

// 0, 1, 2, ... as f64 in `shape`.
Tensor iota(const Shape& shape) {
  return arange(numel(shape), cpu_backend(), DType::f64).reshape(shape);
}

template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& w : words) {
      EXPECT_NE(msg.find(w), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << w << "\"";
    }
  }
}

TEST(Assign, IntoAStridedView) {
  Tensor x = zeros({3, 4}, cpu_backend(), DType::f64);
  // Column 1 and 3 of every row, through a transposed view.
  assign(x.transpose(0, 1).slice(0, 1, 4, 2), iota({2, 3}));
  EXPECT_EQ(x.to_vector<double>(),
            (std::vector<double>{0, 0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5}));
}

TEST(Assign, BroadcastsAndConverts) {
  Tensor x = zeros({2, 3}, cpu_backend(), DType::i32);
  assign(x, from_vector<double>({1.75, -2.5, 3.0}, cpu_backend()));
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 1, -2, 3}));
  assign(x.select(0, 1), 7);
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 7, 7, 7}));
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::u8,
                   DType::boolean}) {
    Tensor y = zeros({5}, cpu_backend(), dt);
    assign(y.slice(0, 1, 4), 1.0);
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}))
        << name(dt);
  }
}

TEST(Assign, SourceSharingTheDestinationsStorage) {
  // Shift right by one: the source is read before it is overwritten.
  Tensor x = iota({6});
  assign(x.slice(0, 1, 6), x.slice(0, 0, 5));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 0, 1, 2, 3, 4}));
  Tensor m = iota({3, 3});
  assign(m, m.transpose(0, 1));
  EXPECT_EQ(m.to_vector<double>(),
            (std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Assign, EmptyDestination) {
  Tensor x = iota({3});
  assign(x.slice(0, 1, 1), iota({0}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 1, 2}));
}

TEST(Assign, Errors) {
  Tensor x = zeros({2, 3}, cpu_backend(), DType::f32);
  expect_error<ShapeError>(
      [&] {
        assign(x, iota({3, 2}));
      },
      {"assign", "f64[3, 2]", "f32[2, 3]"});
  // A source cannot shrink onto a smaller destination either.
  expect_error<ShapeError>(
      [&] {
        assign(x.select(0, 0), iota({2, 3}));
      },
      {"assign", "f64[2, 3]", "f32[3]"});
  expect_error<ValueError>(
      [&] {
        assign(zeros({3}, cpu_backend()).expand({2, 3}), iota({2, 3}));
      },
      {"assign", "f32[2, 3]", "overlaps itself"});
  cpu::Backend other;
  expect_error<BackendError>([&] { assign(x, zeros({3}, other)); },
                             {"assign", "different backends"});
  expect_error<ValueError>([&] { assign(Tensor(), iota({3})); },
                           {"assign", "undefined"});
}

}  // namespace
}  // namespace nascent
