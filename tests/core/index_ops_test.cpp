// embedding and one_hot, the indexing ops built from index_select and eq:
// values against host references, shapes, dtypes and edge cases.
#include <random>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

using conformance::expect_close;
using conformance::HostTensor;
using conformance::Layout;
using conformance::random_tensor;
using conformance::to_host;

cpu::Backend& cpu_backend() {
  static cpu::Backend backend;
  return backend;
}

std::vector<int64_t> random_ids(size_t n, int64_t bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = int64_t(rng() % uint64_t(bound));
  return v;
}

TEST(IndexOps, EmbeddingLooksUpRows) {
  Backend& b = cpu_backend();
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::i64}) {
    for (Layout layout : conformance::kLayouts) {
      Tensor w = random_tensor({50, 12}, dt, b, 3, layout, -3, 3);
      HostTensor hw = to_host(w);
      for (const Shape& s : {Shape{}, Shape{7}, Shape{2, 3, 4}, Shape{0, 5}}) {
        std::vector<int64_t> v = random_ids(size_t(numel(s)), 50, 4);
        Tensor ids = from_vector(v, s, b).cast(DType::i32);
        Tensor got = embedding(w, ids);
        Shape want_shape = s;
        want_shape.push_back(12);
        HostTensor want{want_shape, {}};
        for (int64_t id : v) {
          for (int64_t j = 0; j < 12; ++j) {
            want.v.push_back(hw.v[size_t(id * 12 + j)]);
          }
        }
        EXPECT_EQ(got.dtype(), dt);
        expect_close(got, want,
                     fmt::format("embedding {} {} ids {}", name(dt),
                                 conformance::name(layout), to_string(s)),
                     0.0, 0.0);
      }
    }
  }
}

TEST(IndexOps, EmbeddingWithStridedIds) {
  Backend& b = cpu_backend();
  Tensor w = random_tensor({20, 8}, DType::f32, b, 5);
  std::vector<int64_t> v = random_ids(24, 20, 6);
  // ids [3, 4] read from a transposed [4, 6] buffer's first 3 columns.
  Tensor ids = from_vector(v, {4, 6}, b).transpose().slice(0, 0, 3);
  Tensor got = embedding(w, ids);
  EXPECT_EQ(got.shape(), (Shape{3, 4, 8}));
  std::vector<int64_t> flat = ids.to_vector<int64_t>();
  std::vector<float> hw = w.to_vector<float>();
  std::vector<float> g = got.to_vector<float>();
  for (size_t i = 0; i < flat.size(); ++i) {
    for (size_t j = 0; j < 8; ++j) {
      EXPECT_EQ(g[i * 8 + j], hw[size_t(flat[i]) * 8 + j]) << i << "," << j;
    }
  }
}

TEST(IndexOps, OneHot) {
  Backend& b = cpu_backend();
  std::vector<int64_t> v = random_ids(12, 5, 7);
  Tensor ids = from_vector(v, {3, 4}, b);
  for (DType dt : {DType::i64, DType::f32, DType::boolean, DType::bf16}) {
    Tensor got = one_hot(ids, 6, dt);
    EXPECT_EQ(got.dtype(), dt);
    HostTensor want{{3, 4, 6}, {}};
    for (int64_t id : v) {
      for (int64_t c = 0; c < 6; ++c) want.v.push_back(id == c ? 1.0 : 0.0);
    }
    expect_close(got, want, fmt::format("one_hot {}", name(dt)), 0.0, 0.0);
  }
  // Inferred class count, i32 and strided ids, 0-d ids, empty ids.
  Tensor strided = from_vector(std::vector<int64_t>{2, 9, 0, 9}, b)
                       .cast(DType::i32)
                       .slice(0, 0, 4, 2);  // ids 2, 0
  Tensor inferred = one_hot(strided, -1);
  EXPECT_EQ(inferred.shape(), (Shape{2, 3}));
  EXPECT_EQ(inferred.to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
  Tensor scalar = one_hot(full({}, 1, b, DType::i64), 3);
  EXPECT_EQ(scalar.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(one_hot(zeros({0}, b, DType::i64), 4).shape(), (Shape{0, 4}));
  EXPECT_EQ(one_hot(zeros({2}, b, DType::i64), 1).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1}));
}

}  // namespace
}  // namespace nascent
