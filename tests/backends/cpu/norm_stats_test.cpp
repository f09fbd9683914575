// The CPU norm kernel's optional mean and rstd outputs (for the autodiff
// backward), checked against a float64 computation.
#include <cmath>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "nascent/backends/cpu/backend.h"

namespace nascent {
namespace {

TEST(CpuNormStats, MeanAndRstd) {
  cpu::Backend cpu;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const DType stat = dt == DType::f64 ? DType::f64 : DType::f32;
    for (NormOp op : {NormOp::layer_norm, NormOp::rms_norm}) {
      const int64_t rows = 37, cols = 301;
      Tensor x = conformance::random_tensor(
          {rows, cols}, dt, cpu, 5, conformance::Layout::contiguous, -1.0, 3.0);
      Tensor out = Tensor::empty({rows, cols}, dt, cpu);
      Tensor mean = full({rows}, -7.0, cpu, stat);
      Tensor rstd = Tensor::empty({rows}, stat, cpu);
      cpu.norm(op, x, nullptr, nullptr, 1e-3, out, &mean, &rstd);
      const std::vector<double> v = x.to_vector<double>();
      const std::vector<double> m = mean.to_vector<double>();
      const std::vector<double> r = rstd.to_vector<double>();
      const bool rms = op == NormOp::rms_norm;
      for (int64_t i = 0; i < rows; ++i) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < cols; ++j) mu += v[size_t(i * cols + j)];
        mu = rms ? 0.0 : mu / double(cols);
        for (int64_t j = 0; j < cols; ++j) {
          const double d = v[size_t(i * cols + j)] - mu;
          var += d * d;
        }
        const double want = 1.0 / std::sqrt(var / double(cols) + 1e-3);
        const double tol = stat == DType::f64 ? 1e-12 : 1e-5;
        EXPECT_NEAR(r[size_t(i)], want, tol * want) << name(dt) << " " << i;
        // rms_norm has no mean: the buffer is left as it was.
        EXPECT_NEAR(m[size_t(i)], rms ? -7.0 : mu, tol) << name(dt) << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace nascent
