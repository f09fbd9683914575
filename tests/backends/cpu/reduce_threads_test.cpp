// The CPU reductions split work into blocks fixed by the shape, merged in
// order, so a result is bitwise the same for any thread count.
#include <algorithm>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent {
namespace {

TEST(CpuReduceThreads, SameBitsForAnyThreadCount) {
  cpu::Backend cpu;
  const int saved = cpu::num_threads();
  Tensor flat = conformance::random_tensor({1 << 20}, DType::f32, cpu, 1);
  Tensor m = conformance::random_tensor({600, 1030}, DType::f32, cpu, 2);
  Tensor t = conformance::random_tensor({300, 900}, DType::f32, cpu, 3,
                                        conformance::Layout::transposed);
  auto run = [&] {
    std::vector<std::vector<float>> r;
    r.push_back(sum(flat).to_vector<float>());
    r.push_back(var(flat).to_vector<float>());
    r.push_back(sum(m, {0}).to_vector<float>());
    r.push_back(logsumexp(m, {0}).to_vector<float>());
    r.push_back(mean(m, {1}).to_vector<float>());
    // Rows of m go through the four-stream kernels in groups whose split
    // depends on the thread count; flat through blocks of 2^16.
    r.push_back(max(flat).to_vector<float>());
    r.push_back(min(m, {1}).to_vector<float>());
    r.push_back(var(m, {1}).to_vector<float>());
    r.push_back(max(m, {0}).to_vector<float>());
    r.push_back(argmax(m, 1).cast(DType::f32).to_vector<float>());
    r.push_back(argmin(m, 1).cast(DType::f32).to_vector<float>());
    r.push_back(sum(t, {1}).to_vector<float>());
    r.push_back(cumsum(m, 0).to_vector<float>());
    r.push_back(softmax(m, 0).to_vector<float>());
    r.push_back(layer_norm(m, nullptr, nullptr).to_vector<float>());
    return r;
  };
  cpu::set_num_threads(1);
  const auto one = run();
  // The four-stream argmax/argmin against a plain scan of the same rows
  // (m's view may be strided: read it back row-major).
  {
    const std::vector<float> h = m.to_vector<float>();
    const std::vector<int64_t> amax = argmax(m, 1).to_vector<int64_t>();
    const std::vector<int64_t> amin = argmin(m, 1).to_vector<int64_t>();
    for (int64_t r = 0; r < 600; ++r) {
      const float* row = h.data() + r * 1030;
      EXPECT_EQ(amax[size_t(r)], std::max_element(row, row + 1030) - row);
      EXPECT_EQ(amin[size_t(r)], std::min_element(row, row + 1030) - row);
    }
  }
  for (int threads : {2, 3, 5}) {
    cpu::set_num_threads(threads);
    const auto many = run();
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i], many[i])
          << "result " << i << ", " << threads << " threads";
    }
  }
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace nascent
