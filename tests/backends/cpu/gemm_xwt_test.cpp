// gemm_xwt (y = x @ W^T, f32 x, f32/f16/bf16 W) against float64 products
// of the same values: odd sizes around the 6-row and 16-column tiles and
// the 256-deep blocks, padded row strides (W rows at odd element offsets),
// one and two threads, and bit-identical results across thread counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nascent/backends/cpu/gemm/xwt.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/dtype.h"
#include "tests/backends/cpu/random_values.h"

namespace nascent {
namespace {

// W [n, k] with row stride ldw in `wtype`, and the same values as f32.
struct Weights {
  std::vector<float16> h;
  std::vector<bfloat16> b;
  std::vector<float> f;       // Stored as f32 (the f32 case) ...
  std::vector<float> values;  // ... and what every type holds, widened.
  const void* data(DType wtype) const {
    if (wtype == DType::f16) return h.data();
    if (wtype == DType::bf16) return b.data();
    return f.data();
  }
};

Weights make_weights(DType wtype, int64_t n, int64_t ldw, uint32_t seed) {
  const std::vector<float> raw = random_values(n * ldw, seed, 0.1f);
  Weights w;
  w.values.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (wtype == DType::f16) {
      w.h.push_back(to_float16(raw[i]));
      w.values[i] = to_float(w.h.back());
    } else if (wtype == DType::bf16) {
      w.b.push_back(to_bfloat16(raw[i]));
      w.values[i] = to_float(w.b.back());
    } else {
      w.f.push_back(raw[i]);
      w.values[i] = raw[i];
    }
  }
  return w;
}

constexpr float kPad = -12345.0f;  // y's padding, which must stay as it is.

// Runs gemm_xwt on padded strides and returns y [m, ldy].
std::vector<float> run_xwt(DType wtype, const std::vector<float>& x,
                           int64_t ldx, const Weights& w, int64_t ldw,
                           int64_t m, int64_t n, int64_t k, int64_t ldy) {
  std::vector<float> y(size_t(std::max<int64_t>(m, 1) * ldy), kPad);
  cpu::gemm_xwt(wtype, x.data(), ldx, w.data(wtype), ldw, y.data(), ldy, m, n,
                k);
  return y;
}

// Each y element within f32 summation's worst-case error of the float64
// product (to first order): a term goes through at most k fused
// multiply-adds plus one addition per 256-deep block, each a rounding of at
// most 2^-24 of a partial sum <= sum |x w|.
void expect_product(const std::vector<float>& x, int64_t ldx, const Weights& w,
                    int64_t ldw, const std::vector<float>& y, int64_t ldy,
                    int64_t m, int64_t n, int64_t k, const std::string& label) {
  int failures = 0;
  const double u = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t =
            double(x[size_t(i * ldx + p)]) * w.values[size_t(j * ldw + p)];
        want += t;
        magnitude += std::fabs(t);
      }
      const double bound = double(k + k / 256 + 2) * u * magnitude;
      const double got = y[size_t(i * ldy + j)];
      if (!(std::fabs(got - want) <= bound) && failures++ < 5) {
        ADD_FAILURE() << label << " y[" << i << ", " << j << "] = " << got
                      << ", want " << want << " +- " << bound;
      }
    }
    for (int64_t j = n; j < ldy; ++j) {
      if (y[size_t(i * ldy + j)] != kPad && failures++ < 5) {
        ADD_FAILURE() << label << " wrote y[" << i << ", " << j
                      << "] past n = " << n;
      }
    }
  }
}

constexpr DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

class GemmXwt : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = cpu::num_threads(); }
  void TearDown() override { cpu::set_num_threads(saved_); }
  int saved_ = 1;
};

// Shapes on both sides of every tile and block edge: m around 6, n around
// 16, k around the SIMD width and 256, with row strides past the sizes.
TEST_F(GemmXwt, OddShapesMatchFloat64OnOneAndTwoThreads) {
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1},     {5, 17, 3},    {6, 16, 8},
                        {7, 33, 257},  {13, 15, 256}, {12, 32, 511},
                        {41, 45, 600}, {100, 130, 9}, {67, 260, 520}};
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    for (DType wtype : kTypes) {
      uint32_t seed = 10;
      for (const Case& c : cases) {
        const int64_t ldx = c.k + 3, ldw = c.k + 5, ldy = c.n + 7;
        const std::vector<float> x = random_values(c.m * ldx, seed++, 1.0f);
        const Weights w = make_weights(wtype, c.n, ldw, seed++);
        const std::vector<float> y =
            run_xwt(wtype, x, ldx, w, ldw, c.m, c.n, c.k, ldy);
        expect_product(x, ldx, w, ldw, y, ldy, c.m, c.n, c.k,
                       fmt::format("{} threads {} m={} n={} k={}", threads,
                                   name(wtype), c.m, c.n, c.k));
      }
    }
  }
}

// Contiguous operands, large enough for several column blocks per thread
// and for a second KC block: two threads give the same bits as one (each
// element is one thread's sum, in k order), and both match float64.
TEST_F(GemmXwt, ThreadCountDoesNotChangeTheBits) {
  const int64_t m = 70, n = 1030, k = 700;
  const std::vector<float> x = random_values(m * k, 3, 1.0f);
  for (DType wtype : kTypes) {
    const Weights w = make_weights(wtype, n, k, 4);
    cpu::set_num_threads(2);
    const std::vector<float> y2 = run_xwt(wtype, x, k, w, k, m, n, k, n);
    cpu::set_num_threads(1);
    const std::vector<float> y1 = run_xwt(wtype, x, k, w, k, m, n, k, n);
    EXPECT_EQ(y1, y2) << name(wtype);
    expect_product(x, k, w, k, y2, n, m, n, k,
                   fmt::format("contiguous {}", name(wtype)));
  }
}

// k = 0 gives zeros (no stale values of a reused y); m = 0 or n = 0 write
// nothing.
TEST_F(GemmXwt, EmptySizes) {
  const std::vector<float> x(8, 1.0f);
  const Weights w = make_weights(DType::f16, 4, 2, 5);
  std::vector<float> y(12, kPad);
  cpu::gemm_xwt(DType::f16, x.data(), 2, w.data(DType::f16), 2, y.data(), 4, 3,
                4, 0);
  EXPECT_EQ(y, std::vector<float>(12, 0.0f));
  std::vector<float> untouched(12, kPad);
  cpu::gemm_xwt(DType::f16, x.data(), 2, w.data(DType::f16), 2,
                untouched.data(), 4, 0, 4, 2);
  cpu::gemm_xwt(DType::f16, x.data(), 2, w.data(DType::f16), 2,
                untouched.data(), 4, 3, 0, 2);
  EXPECT_EQ(untouched, std::vector<float>(12, kPad));
}

}  // namespace
}  // namespace nascent
