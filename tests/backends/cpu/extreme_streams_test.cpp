// max/min of rows read as four streams, of columns read a tile at a time,
// and of runs longer than 2^16 split into blocks: these take plain SIMD
// extremes and watch a running sum for NaN (NaN there also when the data
// holds both infinities, or sums that overflow both ways), redoing the run
// exactly when it is NaN. NaN in whole steps, in tails and in the leftover
// rows of a column block, and data that only looks like NaN to the sum,
// against a plain scan, for every floating dtype.
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

constexpr float kInf = std::numeric_limits<float>::infinity();

// NaN if there is one, else the extreme of n values stride apart.
double scan(const double* v, int64_t n, int64_t stride, bool is_max) {
  double m = is_max ? -kInf : kInf;
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i * stride];
    if (x != x) return x;
    if (is_max ? x > m : x < m) m = x;
  }
  return m;
}

void expect_same(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got;
  } else {
    EXPECT_EQ(got, want) << what;
  }
}

// Small integers (many ties) in [-3, 4].
std::vector<float> small_ints(int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  uint32_t s = 777;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(int(s >> 29)) - 3.0f;
  }
  return v;
}

// Both kinds of result of x (any floating dtype) against a scan of its
// values read back as double: along `axis` of a 2-D x, or all of a 1-D x.
void check(const Tensor& x, int axis, const std::string& what) {
  const std::vector<double> h = x.cast(DType::f64).to_vector<double>();
  for (bool is_max : {true, false}) {
    const std::string w = what + (is_max ? ", max" : ", min");
    if (x.ndim() == 1) {
      const Tensor r = is_max ? max(x) : min(x);
      expect_same(r.item<double>(), scan(h.data(), x.numel(), 1, is_max), w);
      continue;
    }
    const int64_t rows = x.shape()[0], cols = x.shape()[1];
    const std::vector<double> got =
        (is_max ? max(x, {axis}) : min(x, {axis})).to_vector<double>();
    const int64_t outs = axis == 1 ? rows : cols;
    for (int64_t o = 0; o < outs; ++o) {
      const double want = axis == 1 ? scan(h.data() + o * cols, cols, 1, is_max)
                                    : scan(h.data() + o, rows, cols, is_max);
      expect_same(got[size_t(o)], want, w + ", output " + std::to_string(o));
    }
  }
}

TEST(CpuExtremeStreams, RowsMatchPlainScan) {
  cpu::Backend cpu;
  const int saved = cpu::num_threads();
  // Rows of 300 and 1030 elements (tails of 12 and 6 past whole steps of
  // 32 f32), enough rows for the four-stream groups (16384 / n rows each).
  for (int64_t n : {int64_t(300), int64_t(1030)}) {
    const int64_t rows = 4 * (16384 / n) + 5;
    std::vector<float> h = small_ints(rows * n);
    auto row = [&](int64_t r) { return h.data() + r * n; };
    for (int64_t j = 0; j < n; ++j) {
      row(0)[j] = -kInf;  // All -inf: the sum stays -inf.
      row(1)[j] = j % 3 == 0 ? -0.0f : 0.0f;
    }
    row(2)[n / 2] = std::nanf("");  // NaN in a whole step...
    row(3)[n - 1] = std::nanf("");  // ...in the tail...
    row(4)[0] = std::nanf("");      // ...first.
    row(5)[n / 3] = kInf;           // Both infinities: a NaN sum.
    row(5)[n / 4] = -kInf;
    row(6)[n - 2] = 100.0f;  // Extremes in the tail.
    row(6)[n - 3] = -100.0f;
    for (int64_t j = 0; j < n; ++j) {  // Sums overflowing both ways.
      row(7)[j] = j < n / 2 ? 3e38f : -3e38f;
    }
    row(7)[5] = 1.0f;
    // The same cases in a row of every later group (other stream slots).
    const int64_t g = 16384 / n;
    for (int64_t c = 0; c < 8; ++c) {
      std::copy(row(c), row(c) + n, row(c + g + 1 + c));
    }
    const Tensor x = from_vector(h, {rows, n}, cpu);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        check(x.cast(dt), 1,
              "rows of " + std::to_string(n) + ", " + name(dt) + ", " +
                  std::to_string(threads) + " threads");
      }
    }
  }
  cpu::set_num_threads(saved);
}

TEST(CpuExtremeStreams, ColumnsMatchPlainScan) {
  cpu::Backend cpu;
  const int saved = cpu::num_threads();
  // 262 rows: two blocks of 128 (passes of four rows 32 apart) and one of
  // 6 (a pass of four rows, two rows left over); 1030 columns: a tail of 6
  // past whole vectors.
  const int64_t rows = 262, cols = 1030;
  std::vector<float> h = small_ints(rows * cols);
  auto at = [&](int64_t r, int64_t c) -> float& {
    return h[size_t(r * cols + c)];
  };
  // NaN in each row of the first four-row pass, in the last pass, in the
  // first leftover row and in the column tail. (x86's max keeps NaN only
  // as its second operand, so a NaN early in a block is lost without the
  // sum's check.)
  at(0, 100) = std::nanf("");
  at(32, 101) = std::nanf("");
  at(64, 102) = std::nanf("");
  at(96, 103) = std::nanf("");
  at(127, 200) = std::nanf("");
  at(260, 300) = std::nanf("");
  at(40, 1027) = std::nanf("");
  // Both infinities in one lane of the sum (columns 3 and 11 share a lane
  // of 8 f32 and of 4 f64): the block is redone exactly.
  at(7, 3) = kInf;
  at(9, 11) = -kInf;
  at(260, 19) = kInf;  // The same in the last block.
  at(261, 27) = -kInf;
  for (int64_t r = 0; r < rows; ++r) at(r, 500) = -kInf;
  // The middle block holds neither NaN nor infinities (the fast loop's
  // result stands): extremes there, in a pass, its last row and the tail.
  at(140, 60) = 9.0f;
  at(255, 61) = -9.0f;
  at(200, 1029) = 9.0f;
  at(170, 500) = 7.0f;
  const Tensor x = from_vector(h, {rows, cols}, cpu);
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      check(x.cast(dt), 0,
            std::string("columns, ") + name(dt) + ", " +
                std::to_string(threads) + " threads");
    }
  }
  // Without the infinities no block is redone: NaN alone must show.
  for (int64_t c : {3, 11, 19, 27}) {
    for (int64_t r = 0; r < rows; ++r) {
      if (std::isinf(at(r, c))) at(r, c) = 1.0f;
    }
  }
  check(from_vector(h, {rows, cols}, cpu), 0, "columns without infinities");
  cpu::set_num_threads(saved);
}

TEST(CpuExtremeStreams, RunsLongerThanABlock) {
  cpu::Backend cpu;
  const int saved = cpu::num_threads();
  constexpr int64_t kBlock = int64_t(1) << 16;  // reduce/plan.h's.
  const int64_t n = 5 * kBlock + 100;
  const std::vector<float> base = small_ints(n);
  struct Case {
    const char* what;
    std::vector<std::pair<int64_t, float>> set;
  };
  const std::vector<Case> cases = {
      {"plain", {{3 * kBlock + 7, 50.0f}, {kBlock - 1, -50.0f}}},
      {"NaN in a block", {{2 * kBlock + 999, std::nanf("")}}},
      {"NaN in the last block", {{n - 3, std::nanf("")}}},
      {"both infinities", {{kBlock + 5, kInf}, {kBlock + 13, -kInf}}},
      {"both infinities and NaN",
       {{kBlock + 5, kInf}, {kBlock + 13, -kInf}, {4 * kBlock, std::nanf("")}}},
  };
  for (const Case& c : cases) {
    std::vector<float> h = base;
    for (auto [i, v] : c.set) h[size_t(i)] = v;
    const Tensor x = from_vector(h, {n}, cpu);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        check(x.cast(dt), 0,
              std::string(c.what) + ", " + name(dt) + ", " +
                  std::to_string(threads) + " threads");
      }
    }
  }
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace nascent
