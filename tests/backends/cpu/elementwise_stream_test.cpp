// Runs long enough for the SIMD kernels' streaming stores (one thread, over
// 16 MB of output), written into views that start off a vector boundary:
// every element must equal what the ordinary path computes on shorter
// pieces, and nothing outside the view may change.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

constexpr int64_t kN = (int64_t(5) << 20) + 3;  // 20 MB of f32.
constexpr int64_t kPiece = int64_t(1) << 18;    // 1 MB: ordinary stores.

class CpuStreaming : public ::testing::Test {
 protected:
  void SetUp() override {
    threads_ = cpu::num_threads();
    cpu::set_num_threads(1);  // One run covers the whole tensor.
  }
  void TearDown() override { cpu::set_num_threads(threads_); }

  // Runs `kernel` into views of a larger buffer at a few offsets and
  // compares with `piece` computed on pieces of kPiece elements.
  void check(const std::function<void(int64_t, int64_t, Tensor&)>& kernel,
             const char* what) {
    Tensor want = Tensor::empty({kN}, DType::f32, backend_);
    for (int64_t s = 0; s < kN; s += kPiece) {
      Tensor part = want.narrow(0, s, std::min(kPiece, kN - s));
      kernel(s, part.numel(), part);
    }
    std::vector<float> w = want.to_vector<float>();
    for (int64_t offset : {0, 1, 3}) {
      Tensor buf = full({kN + 8}, -7.0, backend_);
      Tensor out = buf.narrow(0, offset, kN);
      kernel(0, kN, out);
      std::vector<float> b = buf.to_vector<float>();
      int failures = 0;
      for (int64_t i = 0; i < kN + 8; ++i) {
        bool inside = i >= offset && i < offset + kN;
        float expected = inside ? w[size_t(i - offset)] : -7.0f;
        if (std::memcmp(&b[size_t(i)], &expected, 4) != 0 && ++failures <= 5) {
          ADD_FAILURE() << what << " offset " << offset << ": element " << i
                        << " is " << b[size_t(i)] << ", expected " << expected;
        }
      }
      EXPECT_EQ(failures, 0) << what << " offset " << offset;
    }
  }

  cpu::Backend backend_;
  int threads_ = 1;
  Tensor x_ = randn({kN}, backend_, 1);
  Tensor y_ = rand({kN}, backend_, 2);
  Tensor cond_ = gt(rand({kN}, backend_, 3), 0.5);
};

TEST_F(CpuStreaming, Unary) {
  for (UnaryOp op : {UnaryOp::neg, UnaryOp::exp, UnaryOp::gelu}) {
    check([&](int64_t s, int64_t n,
              Tensor& out) { backend_.unary(op, x_.narrow(0, s, n), {}, out); },
          name(op));
  }
}

TEST_F(CpuStreaming, Binary) {
  Tensor two = full({}, 2.0, backend_);
  check(
      [&](int64_t s, int64_t n, Tensor& out) {
        backend_.binary(BinaryOp::add, x_.narrow(0, s, n), y_.narrow(0, s, n),
                        out);
      },
      "add");
  check(
      [&](int64_t s, int64_t n, Tensor& out) {
        backend_.binary(BinaryOp::div, two.expand({n}), y_.narrow(0, s, n),
                        out);
      },
      "scalar / tensor");
  check(
      [&](int64_t s, int64_t n, Tensor& out) {
        backend_.where(cond_.narrow(0, s, n), x_.narrow(0, s, n),
                       two.expand({n}), out);
      },
      "where");
}

}  // namespace
}  // namespace nascent
