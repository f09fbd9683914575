// qmatmul and dequantize on the CPU, every weight type, against the float64
// product of the reference-decoded weights with x.
//
// The kernels quantize x to 8 bits per block of 32 (256 for k-quants), so
// each term w_i x_i may be off by |w_i| d_x / 2 (d_x = the block's max |x|
// / 127): the bound below adds those up, plus f32 rounding of the sums. A
// wrong bit in a layout breaks it by orders of magnitude.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"
#include "nascent/quant/codec.h"
#include "tests/backends/cpu/random_values.h"

namespace nascent {
namespace {

constexpr QuantType kAllTypes[] = {
    QuantType::f32,  QuantType::f16,  QuantType::bf16, QuantType::q4_0,
    QuantType::q4_1, QuantType::q5_0, QuantType::q5_1, QuantType::q8_0,
    QuantType::q2_k, QuantType::q3_k, QuantType::q4_k, QuantType::q5_k,
    QuantType::q6_k, QuantType::q8_k};

bool quantizes_x(QuantType type) {
  return type != QuantType::f32 && type != QuantType::f16 &&
         type != QuantType::bf16;
}

// Checks y [m, n] = x [m, k] @ W^T, W given by its quantized bytes.
void expect_qmatmul(QuantType type, const std::vector<float>& x,
                    const std::vector<uint8_t>& w, int64_t m, int64_t n,
                    int64_t k, const std::vector<float>& y,
                    const std::string& label) {
  const size_t rb = row_bytes(type, k);
  std::vector<float> wf(static_cast<size_t>(k));
  const int64_t xblock = block_size(type) == 256 ? 256 : 32;
  int failures = 0;
  for (int64_t j = 0; j < n; ++j) {
    quant::dequantize_row(type, w.data() + size_t(j) * rb, wf.data(), k);
    for (int64_t i = 0; i < m; ++i) {
      const float* xi = x.data() + i * k;
      double want = 0, magnitude = 0, x_error = 0;
      for (int64_t b = 0; b < k; b += xblock) {
        double amax = 0, wsum = 0;
        for (int64_t p = b; p < std::min(k, b + xblock); ++p) {
          want += double(wf[size_t(p)]) * xi[p];
          magnitude += std::fabs(double(wf[size_t(p)]) * xi[p]);
          amax = std::max(amax, std::fabs(double(xi[p])));
          wsum += std::fabs(double(wf[size_t(p)]));
        }
        x_error += wsum * amax / 127 / 2;
      }
      const double bound =
          (quantizes_x(type) ? 1.001 * x_error : 0.0) + 1e-5 * magnitude + 1e-6;
      const double got = y[size_t(i * n + j)];
      if (!(std::fabs(got - want) <= bound) && failures++ < 5) {
        ADD_FAILURE() << label << " " << name(type) << " y[" << i << ", " << j
                      << "] = " << got << ", want " << want << " +- " << bound;
      }
    }
  }
}

std::vector<uint8_t> quantize_rows(QuantType type, const std::vector<float>& w,
                                   int64_t n, int64_t k) {
  const size_t rb = row_bytes(type, k);
  std::vector<uint8_t> out(size_t(n) * rb);
  for (int64_t j = 0; j < n; ++j) {
    quant::quantize_row(type, w.data() + j * k, out.data() + size_t(j) * rb, k);
  }
  return out;
}

class QuantQmatmul : public ::testing::Test {
 protected:
  void run(QuantType type, int64_t m, int64_t n, int64_t k, uint32_t seed) {
    const std::vector<float> x = random_values(m * k, seed, 1.0f);
    const std::vector<float> wv = random_values(n * k, seed + 1, 0.05f);
    const std::vector<uint8_t> w = quantize_rows(type, wv, n, k);
    const int64_t rb = int64_t(row_bytes(type, k));
    const Tensor xt = from_vector(x, {m, k}, cpu_);
    const Tensor wt = from_vector(w, {n, rb}, cpu_);
    const Tensor y = qmatmul(xt, wt, type);
    ASSERT_EQ(y.shape(), (Shape{m, n}));
    ASSERT_EQ(y.dtype(), DType::f32);
    expect_qmatmul(type, x, w, m, n, k, y.to_vector<float>(),
                   fmt::format("m={} n={} k={}", m, n, k));
  }
  cpu::Backend cpu_;
};

// K: two blocks plus one, so no SIMD loop divides it (the float types get a
// K that is not a multiple of any vector length).
int64_t odd_k(QuantType type) {
  return block_size(type) == 1 ? 3 * 32 + 5 : 3 * block_size(type);
}

TEST_F(QuantQmatmul, MatVecEveryType) {
  for (QuantType type : kAllTypes) run(type, 1, 37, odd_k(type), 1);
}

TEST_F(QuantQmatmul, SeveralRowsEveryType) {
  for (QuantType type : kAllTypes) {
    run(type, 3, 21, odd_k(type), 2);
    run(type, 19, 40, 2 * odd_k(type), 3);
  }
}

// The portable (Highway, int16) kernels, which the x86 machines that run
// these tests would otherwise never reach: dispatch limited to SSE4 there.
// (Elsewhere the mock is a no-op and this repeats the checks above.)
TEST_F(QuantQmatmul, PortableKernelsEveryType) {
#if HWY_ARCH_X86
  hwy::SetSupportedTargetsForTest(HWY_SSE4);
#endif
  for (QuantType type : kAllTypes) {
    run(type, 1, 37, odd_k(type), 41);
    run(type, 9, 19, 2 * odd_k(type), 42);
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Every SIMD target this CPU runs and the build compiled (SSE4, AVX2,
// AVX-512, ...), and on an AVX-512 VNNI machine its AVX-512 kernels with
// VNNI and without, so that each path is checked on the machine that has
// it and not only the one the dispatch picks: mat-vec, a few rows of x (the
// dot kernels take them four at a time: 6 and 7 leave two and three), and
// shapes whose x rows and weight rows leave partial tiles and panels.
TEST_F(QuantQmatmul, EveryTargetEveryType) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (bool vnni : {true, false}) {
      if (vnni && !cpu::vnni_enabled()) continue;
      cpu::set_vnni_for_test(vnni);
      SCOPED_TRACE(fmt::format("{}{}", hwy::TargetName(target),
                               vnni ? "" : " without VNNI"));
      for (QuantType type : kAllTypes) {
        run(type, 1, 19, odd_k(type), 61);
        run(type, 6, 21, odd_k(type), 63);
        run(type, 7, 18, 2 * odd_k(type), 64);
        run(type, 19, 40, 2 * odd_k(type), 62);
      }
    }
  }
  cpu::set_vnni_for_test(true);
  hwy::SetSupportedTargetsForTest(0);
}

// The VNNI kernels (q4_0, q8_0, q4_K, q6_K) sum the same integer products
// as the kernels without VNNI, in another order, with the offsets of q4_0,
// q8_0 and q6_K taken off in integers and the sub-block scales applied in
// f32: the results agree to f32 rounding, far inside expect_qmatmul's
// bound (whose x quantization term both share), here on random weights and
// on levels at their ends.
TEST_F(QuantQmatmul, VnniAgreesWithTheKernelsWithoutIt) {
  if (!cpu::vnni_enabled()) {
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  }
  for (QuantType type :
       {QuantType::q4_0, QuantType::q8_0, QuantType::q4_k, QuantType::q6_k}) {
    const int64_t m = 21, n = 37, k = 4 * 256;
    for (float spread : {1.0f, 0.0f}) {
      std::vector<float> x = random_values(m * k, 71, 1.0f);
      std::vector<float> wv = random_values(n * k, 72, 0.05f);
      if (spread == 0.0f) {
        // Every |x| and |w| equal: levels at +-127 and the weights' ends.
        for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] < 0 ? -1.0f : 1.0f;
        for (size_t i = 0; i < wv.size(); ++i) {
          wv[i] = wv[i] < 0 ? -0.05f : 0.05f;
        }
      }
      const Tensor xt = from_vector(x, {m, k}, cpu_);
      const Tensor wt = from_vector(quantize_rows(type, wv, n, k),
                                    {n, int64_t(row_bytes(type, k))}, cpu_);
      const std::vector<float> with = qmatmul(xt, wt, type).to_vector<float>();
      cpu::set_vnni_for_test(false);
      const std::vector<float> without =
          qmatmul(xt, wt, type).to_vector<float>();
      cpu::set_vnni_for_test(true);
      for (size_t i = 0; i < with.size(); ++i) {
        const float tol = 2e-5f * (std::fabs(without[i]) + 1.0f);
        ASSERT_NEAR(with[i], without[i], tol)
            << name(type) << " spread " << spread << " at " << i;
      }
    }
  }
}

// Levels at their extremes: x's at +-127 (every |x| equal) against weights
// at the ends of their ranges, where a u8 x i8 pair sum (pmaddubsw) would
// saturate int16 if the kernels fed it a level it cannot take.
TEST_F(QuantQmatmul, ExtremeLevels) {
  for (QuantType type : kAllTypes) {
    const int64_t k = odd_k(type) - odd_k(type) % 32, n = 9;
    for (int64_t m : {1, 12}) {
      std::vector<float> x(size_t(m * k)), wv(size_t(n * k));
      for (int64_t i = 0; i < m * k; ++i) x[size_t(i)] = (i * 7 % 3) ? 1 : -1;
      for (int64_t i = 0; i < n * k; ++i) {
        // Rows alternate signs of x's pattern and its opposite, with a few
        // small values so that the scales and mins differ between blocks.
        const float big = ((i / k) % 2 ? -1.0f : 1.0f) * x[size_t(i % k)];
        wv[size_t(i)] = i % 11 == 0 ? 0.01f * float(i % 5) : big;
      }
      const std::vector<uint8_t> w = quantize_rows(type, wv, n, k);
      const int64_t rb = int64_t(row_bytes(type, k));
      const Tensor y = qmatmul(from_vector(x, {m, k}, cpu_),
                               from_vector(w, {n, rb}, cpu_), type);
      expect_qmatmul(type, x, w, m, n, k, y.to_vector<float>(),
                     fmt::format("extreme m={}", m));
    }
  }
}

// Odd row counts of W and x and several K on both thread counts: the
// tiles' and panels' edges.
TEST_F(QuantQmatmul, OddShapesOnBothThreadCounts) {
  const int saved = cpu::num_threads();
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    for (QuantType type : {QuantType::q4_0, QuantType::q8_0, QuantType::q4_k,
                           QuantType::q6_k, QuantType::f16}) {
      const int64_t b = std::max<int64_t>(32, block_size(type));
      run(type, 1, 301, 5 * b, 50);
      run(type, 7, 33, 3 * b, 51);
      run(type, 13, 17, b, 52);
      run(type, 41, 45, 2 * b, 53);
    }
  }
  cpu::set_num_threads(saved);
}

// Enough weight rows for several tasks (1.25 MB of q4_0 and more), on 2
// threads and on 1, with results that must agree bit for bit: each output
// is one thread's sum whatever the split. m = 2 takes the dot-product
// kernels, m = 20 the int16 panel GEMM (gemm_xwt for f16).
TEST_F(QuantQmatmul, ThreadedRowsMatchOneThread) {
  const int saved = cpu::num_threads();
  for (QuantType type : {QuantType::q4_0, QuantType::q4_k, QuantType::q6_k,
                         QuantType::q8_0, QuantType::f16}) {
    for (int64_t m : {2, 20}) {
      const int64_t n = 1030, k = 1024;
      const std::vector<float> x = random_values(m * k, 5, 1.0f);
      const std::vector<uint8_t> w =
          quantize_rows(type, random_values(n * k, 6, 0.05f), n, k);
      const Tensor xt = from_vector(x, {m, k}, cpu_);
      const Tensor wt = from_vector(w, {n, int64_t(row_bytes(type, k))}, cpu_);
      cpu::set_num_threads(2);
      const std::vector<float> y2 = qmatmul(xt, wt, type).to_vector<float>();
      cpu::set_num_threads(1);
      const std::vector<float> y1 = qmatmul(xt, wt, type).to_vector<float>();
      cpu::set_num_threads(saved);
      EXPECT_EQ(y1, y2) << name(type) << " " << m;
      expect_qmatmul(type, x, w, m, n, k, y2, fmt::format("threads m={}", m));
    }
  }
}

// Weights in memory the backend does not own, at an odd address (a tensor
// inside a mapped file), viewed without a copy.
TEST_F(QuantQmatmul, WrappedExternalWeights) {
  const QuantType type = QuantType::q4_k;
  const int64_t m = 2, n = 24, k = 512;
  const int64_t rb = int64_t(row_bytes(type, k));
  const std::vector<uint8_t> w =
      quantize_rows(type, random_values(n * k, 8, 0.05f), n, k);
  auto file = std::make_shared<std::vector<uint8_t>>(w.size() + 1);
  std::memcpy(file->data() + 1, w.data(), w.size());
  const size_t before = cpu_.memory_stats().allocated_bytes;
  const Tensor wt = Tensor::make({n, rb}, {rb, 1}, 0, DType::u8, cpu_,
                                 cpu_.wrap(file, file->data() + 1, w.size()));
  EXPECT_EQ(cpu_.memory_stats().allocated_bytes, before);
  EXPECT_EQ(cpu::data_ptr<uint8_t>(wt), file->data() + 1);
  const std::vector<float> x = random_values(m * k, 9, 1.0f);
  const Tensor y = qmatmul(from_vector(x, {m, k}, cpu_), wt, type);
  expect_qmatmul(type, x, w, m, n, k, y.to_vector<float>(), "wrapped");
  // A view of every other row: row stride twice the row's bytes.
  const Tensor half = wt.slice(0, 0, n, 2);
  const Tensor yh = qmatmul(from_vector(x, {m, k}, cpu_), half, type);
  std::vector<uint8_t> wh;
  for (int64_t j = 0; j < n; j += 2) {
    wh.insert(wh.end(), w.begin() + j * rb, w.begin() + (j + 1) * rb);
  }
  expect_qmatmul(type, x, wh, m, n / 2, k, yh.to_vector<float>(), "view");
  EXPECT_THROW(cpu_.wrap(nullptr, w.data(), w.size()), ValueError);
}

TEST_F(QuantQmatmul, BatchAxesAndDtypesOfX) {
  const QuantType type = QuantType::q8_0;
  const int64_t n = 5, k = 64;
  const std::vector<float> wv = random_values(n * k, 12, 0.05f);
  const Tensor w = quantize(from_vector(wv, {n, k}, cpu_), type);
  const Tensor x =
      from_vector(random_values(2 * 3 * k, 13, 1.0f), {2, 3, k}, cpu_);
  const Tensor y = qmatmul(x, w, type);
  EXPECT_EQ(y.shape(), (Shape{2, 3, n}));
  const Tensor flat = qmatmul(x.reshape({6, k}), w, type);
  EXPECT_EQ(y.reshape({6, n}).to_vector<float>(), flat.to_vector<float>());
  const Tensor yh = qmatmul(x.cast(DType::bf16), w, type);
  EXPECT_EQ(yh.dtype(), DType::bf16);
  // A transposed x is made contiguous first.
  const Tensor xt = from_vector(random_values(k * 4, 14, 1.0f), {k, 4}, cpu_);
  const std::vector<float> got =
      qmatmul(xt.transpose(), w, type).to_vector<float>();
  const std::vector<float> want =
      qmatmul(xt.transpose().contiguous(), w, type).to_vector<float>();
  EXPECT_EQ(got, want);
}

TEST(QuantDequantize, MatchesTheReferenceForEveryType) {
  cpu::Backend cpu;
  for (QuantType type : kAllTypes) {
    const int64_t n = 40, k = odd_k(type);
    const std::vector<uint8_t> w =
        quantize_rows(type, random_values(n * k, 21, 1.0f), n, k);
    const int64_t rb = int64_t(row_bytes(type, k));
    const Tensor d = dequantize(from_vector(w, {2, n / 2, rb}, cpu), type);
    ASSERT_EQ(d.shape(), (Shape{2, n / 2, k}));
    std::vector<float> want(static_cast<size_t>(n * k));
    for (int64_t j = 0; j < n; ++j) {
      quant::dequantize_row(type, w.data() + j * rb, want.data() + j * k, k);
    }
    EXPECT_EQ(d.to_vector<float>(), want) << name(type);
  }
}

TEST(QuantDequantize, QuantizeFrontEndMatchesQuantizeRow) {
  cpu::Backend cpu;
  const std::vector<float> v = random_values(3 * 256, 31, 1.0f);
  const Tensor q = quantize(from_vector(v, {3, 256}, cpu), QuantType::q4_k);
  ASSERT_EQ(q.shape(), (Shape{3, 144}));
  std::vector<uint8_t> want(3 * 144);
  quant::quantize_row(QuantType::q4_k, v.data(), want.data(), 3 * 256);
  EXPECT_EQ(q.to_vector<uint8_t>(), want);
}

}  // namespace
}  // namespace nascent
