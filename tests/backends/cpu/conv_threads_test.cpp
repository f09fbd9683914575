// The CPU conv and pool kernels split work differently with the thread count
// (whole images per thread, or one image at a time split inside; per-thread
// weight-gradient buffers): every split must give the reference result.
#include <gtest/gtest.h>

#include "conformance/conv_reference.h"
#include "nascent/nascent.h"

namespace nascent {
namespace {

using conformance::random_tensor;
using conformance::to_host;

class ConvThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = cpu::num_threads();
    cpu::set_num_threads(GetParam());
  }
  void TearDown() override { cpu::set_num_threads(saved_); }
  int saved_ = 1;
};

TEST_P(ConvThreads, EveryBatchSplitMatchesReference) {
  Backend& backend = default_backend();
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  p.stride[1] = 2;
  uint64_t seed = 1000;
  for (int64_t batch = 1; batch <= 7; ++batch) {
    // im2col + GEMM (3x3 strided, 1x1) and Winograd (3x3, stride 1, 16
    // channels: its image chunks split differently too).
    for (const Shape& w :
         {Shape{6, 5, 3, 3}, Shape{4, 5, 1, 1}, Shape{16, 16, 3, 3}}) {
      p.stride[1] = w[1] == 16 ? 1 : 2;
      Shape xs = {batch, w[1], 9, 14};
      std::string what = fmt::format("threads {} batch {} weight {}",
                                     GetParam(), batch, to_string(w));
      Tensor x = random_tensor(xs, DType::f32, backend, ++seed);
      Tensor wt = random_tensor(w, DType::f32, backend, ++seed);
      Tensor y = conv2d(x, wt, nullptr, p);
      conformance::expect_close_sums(
          y, conformance::ref_conv2d(to_host(x), to_host(wt), nullptr, p),
          "forward " + what);
      Tensor g = random_tensor(y.shape(), DType::f32, backend, ++seed);
      conformance::expect_close_sums(conv2d_backward_input(g, wt, xs, p),
                                     conformance::ref_conv2d_backward_input(
                                         to_host(g), to_host(wt), xs, p),
                                     "backward_input " + what);
      conformance::expect_close_sums(
          conv2d_backward_weight(x, g, w, p),
          conformance::ref_conv2d_backward_weight(to_host(x), to_host(g), w, p),
          "backward_weight " + what);
    }
  }
}

TEST_P(ConvThreads, PoolingMatchesReference) {
  Backend& backend = default_backend();
  Pool2dParams p;
  for (int64_t batch : {1, 3, 8}) {
    Shape xs = {batch, 7, 24, 25};
    Tensor x = random_tensor(xs, DType::f32, backend, uint64_t(batch));
    auto [y, idx] = max_pool2d_with_indices(x, p);
    conformance::RefMaxPool want = conformance::ref_max_pool2d(to_host(x), p);
    conformance::expect_close(y, want.value, "max", 0.0, 0.0);
    EXPECT_EQ(idx.to_vector<int64_t>(), want.indices);
    conformance::expect_close(
        avg_pool2d(x, p), conformance::ref_avg_pool2d(to_host(x), p), "avg");
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ConvThreads, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace nascent
