// Validation of the indexing front-ends: each bad call raises the right
// error type with a message naming the op, the bad value and the shapes.
#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

cpu::Backend& cpu_backend() {
  static cpu::Backend backend;
  return backend;
}

Tensor ids(const std::vector<int64_t>& v, const Shape& shape,
           DType dtype = DType::i64) {
  return from_vector(v, shape, cpu_backend()).cast(dtype);
}

// Expects fn to throw E with every one of `words` in its message.
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
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(IndexErrors, Gather) {
  Tensor x = zeros({3, 4}, cpu_backend());
  expect_error<ValueError>(
      [&] {
        gather(x, 0, ids({0, 3, 1, 2}, {1, 4}));
      },
      {"gather", "index 3", "[0, 3)", "f32[3, 4]"});
  expect_error<ValueError>(
      [&] {
        gather(x, 1, ids({0, -1}, {1, 2}));
      },
      {"gather", "index -1", "[0, 4)"});
  expect_error<ValueError>(
      [&] {
        gather(x, 1, ids({9}, {1, 1}, DType::i32));
      },
      {"gather", "index 9", "i32[1, 1]"});
  expect_error<DTypeError>(
      [&] {
        gather(x, 0, zeros({1, 4}, cpu_backend()));
      },
      {"gather", "i64 or i32", "f32[1, 4]"});
  expect_error<DTypeError>(
      [&] {
        gather(x, 0, zeros({1, 4}, cpu_backend(), DType::u8));
      },
      {"gather", "u8[1, 4]"});
  expect_error<ShapeError>(
      [&] {
        gather(x, 0, ids({0, 0}, {2}));
      },
      {"gather", "f32[3, 4]", "i64[2]"});
  // Larger than x on an axis other than `axis`.
  expect_error<ShapeError>(
      [&] {
        gather(x, 0, ids(std::vector<int64_t>(5, 0), {1, 5}));
      },
      {"gather", "axis 1", "5 vs 4", "f32[3, 4]", "i64[1, 5]"});
  // ...but any size along `axis` itself.
  EXPECT_EQ(gather(x, 0, ids(std::vector<int64_t>(8, 2), {8, 1})).shape(),
            (Shape{8, 1}));
  expect_error<ValueError>(
      [&] {
        gather(x, 2, ids({0}, {1, 1}));
      },
      {"gather", "axis 2"});
  // Any index into an empty axis is out of range.
  expect_error<ValueError>(
      [&] {
        gather(zeros({0, 4}, cpu_backend()), 0, ids({0}, {1, 1}));
      },
      {"gather", "[0, 0)"});
  cpu::Backend other;
  expect_error<BackendError>(
      [&] {
        gather(x, 0, ids({0}, {1, 1}).to(other));
      },
      {"gather"});
  EXPECT_THROW(gather(Tensor(), 0, ids({0}, {1})), ValueError);
}

// The range check reads only the elements a strided or broadcast index
// view covers, not the rest of its storage.
TEST(IndexErrors, RangeCheckOfIndexViews) {
  Tensor x = zeros({3, 4}, cpu_backend());
  // Storage holds 9s between the used elements: valid.
  Tensor every_other = ids({0, 9, 2, 9, 1, 9, 0, 9}, {8}).slice(0, 0, 8, 2);
  EXPECT_EQ(index_select(x, 0, every_other).shape(), (Shape{4, 4}));
  Tensor cols = ids({1, 9, 0, 9, 3, 9}, {3, 2}).slice(1, 0, 1).expand({3, 4});
  EXPECT_EQ(gather(x, 1, cols).shape(), (Shape{3, 4}));
  // A bad value seen through a broadcast or transposed view is caught.
  expect_error<ValueError>(
      [&] {
        gather(x, 1, ids({1, 4}, {2, 1}).expand({2, 4}));
      },
      {"gather", "index 4", "i64[2, 4]"});
  expect_error<ValueError>(
      [&] {
        gather(x, 0, ids({0, 1, 2, 3, 0, 1, 2, 0}, {4, 2}).transpose());
      },
      {"gather", "index 3", "i64[2, 4]"});
}

TEST(IndexErrors, ScatterAdd) {
  Tensor x = zeros({3, 4}, cpu_backend());
  Tensor src = ones({2, 4}, cpu_backend());
  expect_error<ValueError>(
      [&] {
        scatter_add(x, 0, ids({0, 1, 2, 3, 0, 0, 0, 0}, {2, 4}), src);
      },
      {"scatter_add", "index 3", "[0, 3)", "f32[3, 4]"});
  expect_error<ValueError>(
      [&] {
        scatter_add(x, 1, ids({-4}, {1, 1}), src);
      },
      {"scatter_add", "index -4"});
  expect_error<DTypeError>(
      [&] {
        scatter_add(x, 0, ids({0}, {1, 1}),
                    ones({2, 4}, cpu_backend(), DType::f64));
      },
      {"scatter_add", "f32[3, 4]", "f64[2, 4]"});
  expect_error<DTypeError>(
      [&] {
        Tensor b = zeros({3}, cpu_backend(), DType::boolean);
        scatter_add(b, 0, ids({0}, {1}), b);
      },
      {"scatter_add", "bool[3]"});
  expect_error<DTypeError>(
      [&] {
        scatter_add(x, 0, ones({1, 1}, cpu_backend()), src);
      },
      {"scatter_add", "i64 or i32"});
  // Index larger than src anywhere, or than x off the axis.
  expect_error<ShapeError>(
      [&] {
        scatter_add(x, 0, ids({0, 0, 0}, {3, 1}), src);
      },
      {"scatter_add", "src", "3 vs 2", "i64[3, 1]"});
  expect_error<ShapeError>(
      [&] {
        scatter_add(x, 0, ids(std::vector<int64_t>(5, 0), {1, 5}),
                    ones({1, 5}, cpu_backend()));
      },
      {"scatter_add", "axis 1", "5 vs 4"});
  expect_error<ShapeError>([&] { scatter_add(x, 0, ids({0}, {1}), src); },
                           {"scatter_add", "index has 1 axes"});
  expect_error<ShapeError>(
      [&] {
        scatter_add(x, 0, ids({0}, {1, 1}), ones({4}, cpu_backend()));
      },
      {"scatter_add", "src has 1 axes"});
}

TEST(IndexErrors, IndexSelect) {
  Tensor x = zeros({3, 4}, cpu_backend(), DType::i32);
  expect_error<ValueError>(
      [&] {
        index_select(x, 1, ids({0, 4}, {2}));
      },
      {"index_select", "index 4", "[0, 4)", "i32[3, 4]"});
  expect_error<ValueError>(
      [&] { index_select(x, 0, ids({-1}, {1}, DType::i32)); },
      {"index_select", "index -1", "i32[1]"});
  expect_error<ShapeError>(
      [&] {
        index_select(x, 0, ids({0, 0}, {1, 2}));
      },
      {"index_select", "1-D", "i64[1, 2]"});
  expect_error<DTypeError>(
      [&] { index_select(x, 0, zeros({2}, cpu_backend(), DType::f64)); },
      {"index_select", "f64[2]"});
  expect_error<ShapeError>(
      [&] {
        index_select(zeros({}, cpu_backend()), 0, ids({0, 0}, {2}));
      },
      {"index_select", "0-d", "i64[2]"});
  expect_error<ValueError>([&] { index_select(x, -3, ids({0}, {1})); },
                           {"index_select", "axis -3"});
}

TEST(IndexErrors, EmbeddingAndOneHot) {
  Tensor w = zeros({10, 4}, cpu_backend());
  expect_error<ValueError>(
      [&] {
        embedding(w, ids({1, 10, 2}, {3}));
      },
      {"embedding", "index 10", "[0, 10)", "f32[10, 4]"});
  expect_error<ValueError>(
      [&] {
        embedding(w, ids({-1}, {1, 1}));
      },
      {"embedding", "-1"});
  expect_error<ShapeError>(
      [&] { embedding(zeros({10}, cpu_backend()), ids({1}, {1})); },
      {"embedding", "2-D", "f32[10]"});
  expect_error<DTypeError>([&] { embedding(w, zeros({2}, cpu_backend())); },
                           {"embedding", "f32[2]"});
  expect_error<ValueError>(
      [&] {
        one_hot(ids({0, 3, 1}, {3}), 3);
      },
      {"one_hot", "id 3", "[0, 3)", "i64[3]"});
  expect_error<ValueError>([&] { one_hot(ids({-2}, {1}), 3); },
                           {"one_hot", "id -2"});
  expect_error<ValueError>([&] { one_hot(ids({0}, {1}), -2); },
                           {"one_hot", "-2"});
  expect_error<ValueError>([&] { one_hot(ids({}, {0}), -1); },
                           {"one_hot", "empty", "i64[0]"});
  expect_error<DTypeError>([&] { one_hot(zeros({2}, cpu_backend()), 3); },
                           {"one_hot", "f32[2]"});
}

}  // namespace
}  // namespace nascent
