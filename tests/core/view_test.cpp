// Tensor views (core/tensor.cpp): which calls share storage, which copy, the
// values each view reads, and the errors for views that cannot exist.
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

// 0, 1, 2, ... as f64 in `shape`, contiguous.
Tensor iota(const Shape& shape) {
  return arange(numel(shape), cpu_backend(), DType::f64).reshape(shape);
}

std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

// Host reference: element at a multi-index of a row-major [rows, cols] iota.
std::vector<double> transpose_2d(int64_t rows, int64_t cols) {
  std::vector<double> v;
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) v.push_back(double(i * cols + j));
  }
  return v;
}

template <class Fn>
void expect_error_naming(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& w : words) {
      EXPECT_NE(msg.find(w), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << w << "\"";
    }
  }
}

TEST(View, ReshapeOfContiguousSharesStorage) {
  Tensor x = iota({2, 3, 4});
  Tensor r = x.reshape({4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(r.data(), x.data());
  EXPECT_EQ(values(r), values(x));
  EXPECT_EQ(x.reshape({24}).data(), x.data());
  EXPECT_EQ(x.view({2, 12}).data(), x.data());
}

TEST(View, ReshapeOfTransposedCopiesOnlyWhenNeeded) {
  Tensor t = iota({3, 4}).transpose();  // [4, 3], strides [1, 4]
  ASSERT_FALSE(t.is_contiguous());
  Tensor flat = t.reshape({12});
  EXPECT_NE(flat.data(), t.data());
  EXPECT_TRUE(flat.is_contiguous());
  EXPECT_EQ(values(flat), transpose_2d(3, 4));
  // Splitting an axis or adding size-1 axes needs no copy.
  Tensor split = t.reshape({2, 2, 3});
  EXPECT_EQ(split.data(), t.data());
  EXPECT_EQ(values(split), transpose_2d(3, 4));
  Tensor padded = t.reshape({4, 1, 3, 1});
  EXPECT_EQ(padded.data(), t.data());
  EXPECT_EQ(values(padded), transpose_2d(3, 4));
}

TEST(View, ViewOfNonContiguousFailsClearly) {
  Tensor t = iota({3, 4}).transpose();
  EXPECT_THROW(t.view({12}), ShapeError);
  expect_error_naming([&] { t.view({12}); },
                      {"view", "f64[4, 3]", "[12]", "reshape"});
  // Columns 0 and 2 of 6: [4, 2] with strides [6, 2] cannot merge...
  Tensor s = iota({4, 6}).slice(1, 0, 4, 2);
  EXPECT_THROW(s.view({8}), ShapeError);
  EXPECT_EQ(s.view({2, 2, 2}).data(), s.data());
  EXPECT_EQ(values(s.view({2, 2, 2})), values(s.contiguous()));
  // ...but every other column of all 6 is one run of stride 2.
  Tensor every = iota({4, 6}).slice(1, 0, 6, 2);
  EXPECT_EQ(every.view({12}).data(), every.data());
  EXPECT_EQ(every.view({12}).strides(), (Strides{2}));
}

TEST(View, ReshapeErrorsNameShapes) {
  Tensor x = iota({2, 3});
  EXPECT_THROW(x.reshape({4, -1}), ShapeError);
  EXPECT_THROW(x.reshape({-1, -1}), ShapeError);
  EXPECT_THROW(x.reshape({7}), ShapeError);
  EXPECT_THROW(x.reshape({-2, 3}), ShapeError);
  expect_error_naming([&] { x.reshape({7}); }, {"reshape", "[2, 3]", "[7]"});
  // -1 next to a 0 is ambiguous.
  EXPECT_THROW(iota({0, 3}).reshape({0, -1}), ShapeError);
  EXPECT_EQ(iota({0, 3}).reshape({3, 0, 2}).shape(), (Shape{3, 0, 2}));
}

// Bug fixed: a 0-d tensor could not be viewed as [1] (the stride walk found
// no axes), so reshape({1}) and flatten() of a scalar threw.
TEST(View, ZeroDimReshape) {
  Tensor s = full({}, 7.0, cpu_backend(), DType::f64);
  EXPECT_EQ(s.reshape({1}).shape(), (Shape{1}));
  EXPECT_EQ(s.reshape({1, 1}).data(), s.data());
  EXPECT_EQ(s.flatten().shape(), (Shape{1}));
  EXPECT_EQ(s.view({-1}).item<double>(), 7.0);
  EXPECT_EQ(s.reshape({1}).reshape({}).item<double>(), 7.0);
}

TEST(View, TransposeAndPermute) {
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  EXPECT_EQ(p.data(), x.data());
  std::vector<double> want;
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j)
        want.push_back(double(i * 12 + j * 4 + k));
    }
  }
  EXPECT_EQ(values(p), want);
  EXPECT_EQ(values(x.transpose(0, 2)), values(x.permute({2, 1, 0})));
  EXPECT_THROW(x.permute({0, 1}), ShapeError);
  EXPECT_THROW(x.permute({0, 1, 1}), ValueError);
  EXPECT_THROW(x.permute({0, 1, 3}), ValueError);
  EXPECT_THROW(x.transpose(0, 3), ValueError);
}

// Bug fixed: transpose of a 0-d or 1-D tensor returned it without checking
// the axes, so transpose(0, 5) silently succeeded.
TEST(View, TransposeChecksAxesOnSmallTensors) {
  Tensor v = iota({3});
  EXPECT_EQ(v.transpose(0, 0).data(), v.data());
  EXPECT_EQ(v.transpose(0, -1).shape(), (Shape{3}));
  EXPECT_THROW(v.transpose(0, 5), ValueError);
  EXPECT_EQ(v.transpose().shape(), (Shape{3}));  // Defaults (-2, -1): no-op.
}

TEST(View, SliceWithSteps) {
  Tensor x = iota({10});
  EXPECT_EQ(values(x.slice(0, 1, 8, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(x.slice(0, -3, 10)), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(x.slice(0, 2, 100, 4)), (std::vector<double>{2, 6}));
  EXPECT_EQ(x.slice(0, 6, 2).numel(), 0);
  EXPECT_EQ(x.slice(0, -100, 2).numel(), 2);
  EXPECT_THROW(x.slice(0, 0, 5, 0), ValueError);
  EXPECT_THROW(x.slice(0, 0, 5, -1), ValueError);
  EXPECT_THROW(x.slice(1, 0, 5), ValueError);
  // A slice of a slice composes steps and offsets.
  Tensor m = iota({4, 6});
  Tensor s = m.slice(1, 1, 6, 2).slice(0, 1, 4, 2);  // rows 1, 3; cols 1, 3, 5
  EXPECT_EQ(s.data(), m.data());
  EXPECT_EQ(values(s), (std::vector<double>{7, 9, 11, 19, 21, 23}));
  EXPECT_EQ(values(s.slice(1, 1, 3, 1)), (std::vector<double>{9, 11, 21, 23}));
}

TEST(View, NarrowAndSelect) {
  Tensor x = iota({3, 4});
  EXPECT_EQ(values(x.narrow(1, 1, 2)),
            (std::vector<double>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(values(x.narrow(0, -1, 1)), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(x.narrow(1, 4, 0).numel(), 0);
  EXPECT_THROW(x.narrow(1, 3, 2), ValueError);
  EXPECT_THROW(x.narrow(1, 0, -1), ValueError);
  expect_error_naming([&] { x.narrow(1, 3, 2); }, {"narrow", "f64[3, 4]"});
  Tensor row = x.select(0, -1);
  EXPECT_EQ(row.shape(), (Shape{4}));
  EXPECT_EQ(values(row), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(values(x.select(1, 2)), (std::vector<double>{2, 6, 10}));
  EXPECT_EQ(x.select(1, 2).select(0, 1).item<double>(), 6.0);
  EXPECT_THROW(x.select(0, 3), ValueError);
  EXPECT_THROW(x.select(0, -4), ValueError);
  expect_error_naming([&] { x.select(1, 4); }, {"select", "4", "f64[3, 4]"});
}

// Bug fixed: select() and shape(axis) on a 0-d tensor read past the end of
// its (empty) shape instead of raising.
TEST(View, ZeroDimAxisAccess) {
  Tensor s = full({}, 1.0, cpu_backend());
  EXPECT_THROW(s.select(0, 0), ShapeError);
  EXPECT_THROW(s.shape(0), ValueError);
  EXPECT_EQ(s.unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(s.unsqueeze(-1).shape(), (Shape{1}));
  EXPECT_EQ(s.squeeze().shape(), (Shape{}));
  EXPECT_EQ(s.squeeze(0).shape(), (Shape{}));
}

TEST(View, Expand) {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Strides{0, 1, 0}));
  EXPECT_EQ(e.data(), x.data());
  std::vector<double> want;
  for (int a = 0; a < 2; ++a) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) want.push_back(i);
    }
  }
  EXPECT_EQ(values(e), want);
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_EQ(x.expand({3, 0}).numel(), 0);
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_THROW(x.expand({4, 4}), ShapeError);
  EXPECT_THROW(x.expand({4}), ShapeError);
  EXPECT_THROW(x.expand({-1, 3, 4}), ShapeError);
  expect_error_naming(
      [&] {
        x.expand({4, 4});
      },
      {"expand", "f64[3, 1]", "[4, 4]"});
}

TEST(View, SqueezeUnsqueezeFlatten) {
  Tensor x = iota({1, 3, 1, 2});
  EXPECT_EQ(x.squeeze().shape(), (Shape{3, 2}));
  EXPECT_EQ(x.squeeze(2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(x.squeeze(-3).shape(), (Shape{1, 3, 1, 2}));  // Size 3: no-op.
  EXPECT_EQ(x.squeeze().data(), x.data());
  EXPECT_THROW(x.squeeze(4), ValueError);
  Tensor t = iota({3, 4}).transpose();  // [4, 3], strides [1, 4]
  Tensor u = t.unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{4, 1, 3}));
  EXPECT_EQ(values(u), transpose_2d(3, 4));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{4, 3, 1}));
  EXPECT_EQ(values(t.unsqueeze(-1)), transpose_2d(3, 4));
  EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 4, 3}));
  EXPECT_THROW(t.unsqueeze(3), ValueError);
  Tensor y = iota({2, 3, 4, 5});
  EXPECT_EQ(y.flatten().shape(), (Shape{120}));
  EXPECT_EQ(y.flatten(1, 2).shape(), (Shape{2, 12, 5}));
  EXPECT_EQ(y.flatten(-2).shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(y.flatten(1, 2).data(), y.data());
  EXPECT_THROW(y.flatten(2, 1), ValueError);
  // Flattening a transposed view copies, with the right order.
  EXPECT_EQ(values(t.flatten()), transpose_2d(3, 4));
}

TEST(View, AsStridedBounds) {
  Tensor x = iota({2, 3});  // 6 elements.
  Tensor diag = x.as_strided({2}, {4}, 0);
  EXPECT_EQ(values(diag), (std::vector<double>{0, 4}));
  EXPECT_THROW(x.as_strided({2}, {4}, 2), ShapeError);
  EXPECT_THROW(x.as_strided({7}, {1}, 0), ShapeError);
  EXPECT_THROW(x.as_strided({2, 3}, {3}, 0), ShapeError);
  EXPECT_THROW(x.as_strided({2}, {1}, -1), ShapeError);
  expect_error_naming([&] { x.as_strided({7}, {1}, 0); }, {"[7]", "6"});
  // Negative strides: walk backwards from the last element.
  Tensor rev = x.as_strided({6}, {-1}, 5);
  EXPECT_EQ(values(rev), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  Tensor rev2 = x.as_strided({2, 3}, {-3, -1}, 5);
  EXPECT_EQ(values(rev2), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values(rev2.contiguous()), values(rev2));
  EXPECT_THROW(x.as_strided({6}, {-1}, 4), ShapeError);
  // A view of no elements may point anywhere.
  EXPECT_EQ(x.as_strided({0, 3}, {100, 100}, 50).numel(), 0);
}

TEST(View, ContiguousAndClone) {
  Tensor x = iota({3, 4});
  Tensor c = x.contiguous();
  EXPECT_TRUE(c.same_view(x));
  EXPECT_EQ(c.data(), x.data());
  // Size-1 axes may carry any stride and still be contiguous.
  Tensor odd = x.as_strided({3, 1, 4}, {4, 99, 1}, 0);
  EXPECT_TRUE(odd.is_contiguous());
  EXPECT_EQ(odd.contiguous().data(), x.data());
  Tensor t = x.transpose();
  Tensor tc = t.contiguous();
  EXPECT_NE(tc.data(), x.data());
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_EQ(values(tc), values(t));
  Tensor k = x.clone();
  EXPECT_NE(k.data(), x.data());
  EXPECT_EQ(values(k), values(x));
  // An offset slice of whole rows is contiguous and kept as is.
  Tensor rows = x.slice(0, 1, 3);
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.contiguous().data(), x.data());
  EXPECT_EQ(values(rows.contiguous()),
            (std::vector<double>{4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(View, ToVectorOfViews) {
  Tensor x = iota({4, 5});
  EXPECT_EQ(x.slice(1, 1, 5, 2).select(0, 2).to_vector<int64_t>(),
            (std::vector<int64_t>{11, 13}));
  EXPECT_EQ(x.transpose().slice(0, 4, 5).to_vector<float>(),
            (std::vector<float>{4, 9, 14, 19}));
  EXPECT_EQ(x.select(1, 0).unsqueeze(1).expand({4, 2}).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 5, 5, 10, 10, 15, 15}));
  EXPECT_EQ(x.slice(0, 0, 0).to_vector<double>().size(), 0u);
  EXPECT_EQ(x.select(0, 1).select(0, 3).item<double>(), 8.0);
  EXPECT_THROW(x.select(0, 1).item<double>(), ShapeError);
  std::vector<bool> b = x.slice(1, 0, 2).to_vector<bool>();
  EXPECT_EQ(
      b, (std::vector<bool>{false, true, true, true, true, true, true, true}));
}

TEST(View, Cast) {
  Tensor x = iota({2, 3}).transpose();
  EXPECT_EQ(x.cast(DType::f64).data(), x.data());
  Tensor f = x.cast(DType::f16);
  EXPECT_EQ(f.dtype(), DType::f16);
  EXPECT_EQ(f.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(f), values(x));
  Tensor n = mul(iota({4}), -1.5).cast(DType::i32);
  EXPECT_EQ(n.to_vector<int32_t>(), (std::vector<int32_t>{0, -1, -3, -4}));
  EXPECT_EQ(iota({3}).cast(DType::boolean).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
}

TEST(View, ToAnotherBackend) {
  cpu::Backend other;
  Tensor x = iota({3, 4}).transpose().slice(0, 1, 4);
  size_t before = other.memory_stats().allocated_bytes;
  Tensor y = x.to(other);
  EXPECT_EQ(&y.backend(), &other);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_EQ(values(y), values(x));
  EXPECT_EQ(other.memory_stats().allocated_bytes - before,
            size_t(x.numel()) * 8);
  EXPECT_TRUE(y.to(other).same_view(y));
  // Ops on tensors of two backends are refused; moving one back works.
  EXPECT_THROW(add(x, y), BackendError);
  EXPECT_EQ(values(add(x, y.to(cpu_backend()))), values(mul(x, 2)));
}

TEST(View, UndefinedAndMake) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_THROW(u.shape(), ValueError);
  EXPECT_EQ(u.to_string(), "undefined");
  Tensor x = iota({2, 3});
  EXPECT_THROW(
      Tensor::make({2, 3}, {1}, 0, DType::f64, cpu_backend(), x.data()),
      ShapeError);
  EXPECT_THROW(Tensor::make({2}, {1}, 0, DType::f64, cpu_backend(), nullptr),
               BackendError);
  // The same storage read as a wider dtype holds fewer elements.
  EXPECT_THROW(Tensor::make({6}, {1}, 0, DType::f64, cpu_backend(),
                            iota({6}).cast(DType::f32).data()),
               ShapeError);
}

}  // namespace
}  // namespace nascent
