// argmax/argmin of long rows read as four streams in one pass (the index of
// the step where each lane's extreme last rose, then a scan of one step):
// ties, NaN, infinities, signed zeros and extremes in the tail against a
// plain scan, for every floating dtype. Rows longer than 2^16 are split
// into blocks of 2^16 whose results merge: the same cases across blocks.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

// First NaN, else the first extreme.
int64_t scan(const float* row, int64_t n, bool is_max) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (row[i] != row[i]) return i;
    if (is_max ? row[i] > row[best] : row[i] < row[best]) best = i;
  }
  return best;
}

// Rows of small integers (many ties), some rows rewritten with edge cases.
std::vector<float> rows_with_edges(int64_t rows, int64_t n) {
  std::vector<float> v(size_t(rows * n));
  uint32_t s = 12345;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(int(s >> 29)) - 3.0f;  // -3..4
  }
  const float inf = std::numeric_limits<float>::infinity();
  auto row = [&](int64_t r) { return v.data() + r * n; };
  for (int64_t j = 0; j < n; ++j) {
    row(0)[j] = -inf;                       // All -inf.
    row(1)[j] = inf;                        // All inf.
    row(2)[j] = j % 3 == 0 ? -0.0f : 0.0f;  // Signed zeros only.
    row(3)[j] = float(j % 7);               // Ties in every step.
    row(4)[j] = -float(j % 5);
  }
  row(5)[n - 1] = 100.0f;  // Extremes in the scalar tail.
  row(5)[n - 2] = -100.0f;
  row(6)[0] = 100.0f;  // At the first element.
  row(6)[1] = -100.0f;
  row(7)[n / 2] = std::nanf("");  // NaN in a whole step.
  row(8)[n - 1] = std::nanf("");  // NaN in the tail.
  row(9)[3] = std::nanf("");      // Two NaNs: the first counts.
  row(9)[n - 3] = std::nanf("");
  row(10)[n / 3] = inf;  // One infinity each way.
  row(10)[n / 4] = -inf;
  row(11)[40] = 9.0f;  // The same extreme in two steps: the first.
  row(11)[n - 40] = 9.0f;
  row(11)[41] = -9.0f;
  row(11)[n - 41] = -9.0f;
  return v;
}

TEST(CpuArgStreams, MatchesPlainScan) {
  cpu::Backend cpu;
  // One thread: the rows of a call reach the four-stream kernel whole.
  const int saved = cpu::num_threads();
  cpu::set_num_threads(1);
  // Rows of 300 and 1030 elements (tails of 12 and 6 past whole steps of
  // 32 f32), enough rows for the four-stream groups (16384 / n rows each).
  for (int64_t n : {int64_t(300), int64_t(1030)}) {
    const int64_t rows = 4 * (16384 / n) + 5;
    const std::vector<float> h = rows_with_edges(rows, n);
    const Tensor x = from_vector(h, {rows, n}, cpu);
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      const Tensor xd = x.cast(dt);
      const std::vector<int64_t> amax = argmax(xd, 1).to_vector<int64_t>();
      const std::vector<int64_t> amin = argmin(xd, 1).to_vector<int64_t>();
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = h.data() + r * n;
        EXPECT_EQ(amax[size_t(r)], scan(row, n, true))
            << "argmax, row " << r << " of " << n << ", " << name(dt);
        EXPECT_EQ(amin[size_t(r)], scan(row, n, false))
            << "argmin, row " << r << " of " << n << ", " << name(dt);
      }
    }
  }
  cpu::set_num_threads(saved);
}

TEST(CpuArgStreams, RowsLongerThanABlock) {
  cpu::Backend cpu;
  const int saved = cpu::num_threads();
  constexpr int64_t kBlock = int64_t(1) << 16;  // reduce/plan.h's.
  // Two whole blocks, and three plus a partial one.
  for (int64_t n : {2 * kBlock, 3 * kBlock + 1000}) {
    const int64_t rows = 14;
    std::vector<float> h = rows_with_edges(rows, n);
    auto row = [&](int64_t r) { return h.data() + r * n; };
    row(12)[kBlock - 1] = 50.0f;  // A tie across a block boundary.
    row(12)[kBlock] = 50.0f;
    row(12)[kBlock + 1] = -50.0f;
    row(12)[kBlock - 2] = -50.0f;
    row(13)[n - 5] = std::nanf("");  // NaN only in the last block...
    row(13)[7] = 60.0f;              // ...after the extremes.
    row(13)[kBlock + 7] = -60.0f;
    const Tensor x = from_vector(h, {rows, n}, cpu);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        // Every other row through a strided view (kept stride 2n).
        const Tensor xd = x.cast(dt);
        const Tensor odd = xd.slice(0, 1, rows, 2);
        const std::vector<int64_t> amax = argmax(xd, 1).to_vector<int64_t>();
        const std::vector<int64_t> amin = argmin(xd, 1).to_vector<int64_t>();
        const std::vector<int64_t> odd_max =
            argmax(odd, 1).to_vector<int64_t>();
        for (int64_t r = 0; r < rows; ++r) {
          const std::string what = std::to_string(r) + " of " +
                                   std::to_string(n) + ", " + name(dt) + ", " +
                                   std::to_string(threads) + " threads";
          EXPECT_EQ(amax[size_t(r)], scan(row(r), n, true))
              << "argmax, row " << what;
          EXPECT_EQ(amin[size_t(r)], scan(row(r), n, false))
              << "argmin, row " << what;
          if (r % 2 == 1) {
            EXPECT_EQ(odd_max[size_t(r / 2)], scan(row(r), n, true))
                << "argmax of a strided view, row " << what;
          }
        }
        // One row as a whole tensor (a single output).
        const Tensor one = xd.select(0, 13);
        EXPECT_EQ(argmax(one).item<int64_t>(), scan(row(13), n, true))
            << name(dt);
      }
    }
  }
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace nascent
