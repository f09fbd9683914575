// argmax/argmin of long rows read as four streams in one pass (the index of
// the step where each lane's extreme last rose, then a scan of one step):
// ties, NaN, infinities, signed zeros and extremes in the tail against a
// plain scan, for every floating dtype.
#include <cmath>
#include <limits>
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

}  // namespace
}  // namespace nascent
