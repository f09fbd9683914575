// Conformance cases for the quant family: weights quantized on the host by
// the reference quantizers, moved to the backend, and compared with the
// float64 product of the reference-decoded weights (dequantize: exactly).
// x comes in every layout; the bound allows for x's 8-bit quantization
// (see tests/backends/cpu/quant_qmatmul_test.cpp).
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr QuantType kTypes[] = {
    QuantType::f32,  QuantType::f16,  QuantType::bf16, QuantType::q4_0,
    QuantType::q4_1, QuantType::q5_0, QuantType::q5_1, QuantType::q8_0,
    QuantType::q2_k, QuantType::q3_k, QuantType::q4_k, QuantType::q5_k,
    QuantType::q6_k, QuantType::q8_k};

// The block types meet an 8-bit x; the float types use x as it is.
bool activation_quantized(QuantType type) {
  return block_size(type) > 1;
}

// W [n, k] quantized on the host, as bytes on `backend`, and decoded.
struct Weights {
  Tensor bytes;
  std::vector<float> values;
};

Weights make_weights(QuantType type, int64_t n, int64_t k, Backend& backend,
                     uint64_t seed) {
  Generator gen(seed);
  Backend& host = default_backend();
  const Tensor w = normal({n, k}, 0.0, 0.05, host, gen);
  const Tensor bytes = quantize(w, type);
  const std::vector<uint8_t> raw = bytes.to_vector<uint8_t>();
  std::vector<float> values(static_cast<size_t>(n * k));
  dequantize_row(type, raw.data(), values.data(), n * k);
  return {bytes.to(backend), values};
}

CONFORMANCE_CASE(qmatmul, "every weight type, every layout of x") {
  for (QuantType type : kTypes) {
    const int64_t k = block_size(type) == 1 ? 37 : 2 * block_size(type);
    const int64_t m = 3, n = 19;
    const Weights w = make_weights(type, n, k, backend, 3);
    const bool quantized_x = activation_quantized(type);
    const int64_t xblock = block_size(type) == 256 ? 256 : 32;
    for (Layout layout : kLayouts) {
      const Tensor x = random_tensor({m, k}, DType::f32, backend, 4, layout);
      const HostTensor xh = to_host(x);
      const std::vector<double> got =
          qmatmul(x, w.bytes, type).to_vector<double>();
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, magnitude = 0, x_error = 0;
          for (int64_t b = 0; b < k; b += xblock) {
            double amax = 0, wsum = 0;
            for (int64_t p = b; p < std::min(k, b + xblock); ++p) {
              const double wv = w.values[size_t(j * k + p)];
              const double xv = xh.v[size_t(i * k + p)];
              want += wv * xv;
              magnitude += std::fabs(wv * xv);
              amax = std::max(amax, std::fabs(xv));
              wsum += std::fabs(wv);
            }
            x_error += wsum * amax / 127 / 2;
          }
          const double bound =
              (quantized_x ? 1.001 * x_error : 0.0) + 1e-5 * magnitude + 1e-6;
          ASSERT_NEAR(got[size_t(i * n + j)], want, bound)
              << name(type) << " " << name(layout) << " [" << i << ", " << j
              << "]";
        }
      }
    }
  }
}

CONFORMANCE_CASE(dequantize, "every type, exactly the reference decode") {
  for (QuantType type : kTypes) {
    const int64_t k = block_size(type) == 1 ? 37 : 2 * block_size(type);
    const Weights w = make_weights(type, 9, k, backend, 5);
    const std::vector<float> got = dequantize(w.bytes, type).to_vector<float>();
    EXPECT_EQ(got, w.values) << name(type);
    // A view of every other row.
    const std::vector<float> odd =
        dequantize(w.bytes.slice(0, 1, 9, 2), type).to_vector<float>();
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        ASSERT_EQ(odd[size_t(r * k + c)], w.values[size_t((2 * r + 1) * k + c)])
            << name(type);
      }
    }
  }
}

}  // namespace
}  // namespace nascent::conformance
