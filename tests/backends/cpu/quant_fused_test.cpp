// qmatmul_fused (several weight matrices against one x in one call) against
// qmatmul of each matrix alone: the same kernels on the same quantized x,
// so the results must agree bit for bit, on one thread and on two, for a
// few x rows (one pool job for all) and many (one matrix at a time). qmatmul
// itself is checked against float64 references in quant_qmatmul_test.cpp.
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/quant/fused.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"
#include "nascent/quant/codec.h"
#include "tests/backends/cpu/random_values.h"

namespace nascent {
namespace {

struct Weights {
  QuantType type;
  int64_t n;
  std::vector<uint8_t> bytes;
};

Weights make_weights(QuantType type, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<float> v = random_values(n * k, seed, 0.05f);
  const size_t rb = row_bytes(type, k);
  Weights w{type, n, std::vector<uint8_t>(size_t(n) * rb)};
  for (int64_t j = 0; j < n; ++j) {
    quant::quantize_row(type, v.data() + j * k, w.bytes.data() + size_t(j) * rb,
                        k);
  }
  return w;
}

// Every matrix of `ws` against x [m, k], fused and one by one.
void expect_fused_matches(const std::vector<Weights>& ws, int64_t m, int64_t k,
                          const std::string& label) {
  cpu::Backend cpu;
  const std::vector<float> x = random_values(m * k, 7, 1.0f);
  const Tensor xt = from_vector(x, {m, k}, cpu);
  std::vector<std::vector<float>> fused(ws.size());
  std::vector<cpu::QLinear> ls;
  for (size_t i = 0; i < ws.size(); ++i) {
    // NaN where nothing was written.
    fused[i].assign(size_t(m * ws[i].n), std::nanf(""));
    ls.push_back({ws[i].type, ws[i].bytes.data(),
                  int64_t(row_bytes(ws[i].type, k)), ws[i].n, fused[i].data()});
  }
  cpu::qmatmul_fused(x.data(), m, k, ls);
  for (size_t i = 0; i < ws.size(); ++i) {
    const int64_t rb = int64_t(row_bytes(ws[i].type, k));
    const Tensor wt = from_vector(ws[i].bytes, {ws[i].n, rb}, cpu);
    const std::vector<float> want =
        qmatmul(xt, wt, ws[i].type).to_vector<float>();
    ASSERT_EQ(want.size(), fused[i].size());
    int failures = 0;
    for (size_t j = 0; j < want.size(); ++j) {
      if (!(fused[i][j] == want[j]) && failures++ < 5) {
        ADD_FAILURE() << label << " matrix " << i << " (" << name(ws[i].type)
                      << ") y[" << j / size_t(ws[i].n) << ", "
                      << j % size_t(ws[i].n) << "] = " << fused[i][j]
                      << ", qmatmul gives " << want[j];
      }
    }
  }
}

// A LLaMA layer's q, k and v (Q4_K_M keeps v in q6_K in some layers, so
// the 256-value and, with q8_0, the 32-value activations both appear),
// odd row counts (tile edges), on 1 and 2 threads, few and many x rows.
TEST(QuantFused, MixedTypesMatchQmatmul) {
  const int saved = cpu::num_threads();
  const int64_t k = 512;
  const std::vector<Weights> ws = {make_weights(QuantType::q4_k, 301, k, 1),
                                   make_weights(QuantType::q6_k, 33, k, 2),
                                   make_weights(QuantType::q8_0, 70, k, 3),
                                   make_weights(QuantType::q4_0, 5, k, 4),
                                   make_weights(QuantType::f16, 17, k, 5),
                                   make_weights(QuantType::f32, 16, k, 6)};
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    for (int64_t m : {1, 3, 12}) {
      expect_fused_matches(ws, m, k,
                           fmt::format("threads={} m={}", threads, m));
    }
  }
  cpu::set_num_threads(saved);
}

// Each type alone, as the model calls it (one type for q, k and v), with
// enough rows for several tasks per matrix.
TEST(QuantFused, EachTypeManyTasks) {
  const int saved = cpu::num_threads();
  cpu::set_num_threads(2);
  const int64_t k = 1024;
  for (QuantType type : {QuantType::q4_0, QuantType::q8_0, QuantType::q4_k,
                         QuantType::q6_k, QuantType::f16}) {
    const std::vector<Weights> ws = {make_weights(type, 1030, k, 10),
                                     make_weights(type, 1, k, 11),
                                     make_weights(type, 129, k, 12)};
    expect_fused_matches(ws, 1, k, fmt::format("{}", name(type)));
  }
  cpu::set_num_threads(saved);
}

// No matrices, or matrices without rows: nothing to do, nothing written.
TEST(QuantFused, EmptyLists) {
  const std::vector<float> x(64, 1.0f);
  cpu::qmatmul_fused(x.data(), 1, 64, {});
  std::vector<float> y(4, 5.0f);
  const std::vector<uint8_t> w(row_bytes(QuantType::q8_0, 64));
  const cpu::QLinear l{QuantType::q8_0, w.data(),
                       int64_t(row_bytes(QuantType::q8_0, 64)), 0, y.data()};
  cpu::qmatmul_fused(x.data(), 1, 64, std::span<const cpu::QLinear>(&l, 1));
  EXPECT_EQ(y, std::vector<float>(4, 5.0f));
}

}  // namespace
}  // namespace nascent
