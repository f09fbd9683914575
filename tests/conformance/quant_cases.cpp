// Conformance cases for the quant family: weights quantized on the host by
// the reference quantizers, moved to the backend, and compared with the
// float64 product of the reference-decoded weights (dequantize and
// qembedding: exactly). x comes in every layout; the bound allows for x's
// 8-bit quantization (see tests/backends/cpu/quant_qmatmul_test.cpp).
// qmatmul over several weights of different types in one call must give
// each weight's single qmatmul.
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"
#include "quant/ggml_vectors.h"

#include "nascent/quant/codec.h"

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
  quant::dequantize_row(type, raw.data(), values.data(), n * k);
  return {bytes.to(backend), values};
}

// Expects got [m, n] to be x [m, k] @ W^T for W [n, k] decoded as `values`,
// within the bound of x's 8-bit quantization (the block types) and the f32
// sums.
void expect_qmatmul(const std::vector<double>& got, const HostTensor& xh,
                    const std::vector<float>& values, QuantType type, int64_t m,
                    int64_t n, int64_t k, const std::string& what) {
  const bool quantized_x = activation_quantized(type);
  for (int64_t i = 0; i < m; ++i) {
    const double* x = xh.v.data() + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const float* w = values.data() + j * k;
      double want = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        want += double(w[p]) * x[p];
        magnitude += std::fabs(double(w[p]) * x[p]);
      }
      const double bound =
          (quantized_x ? 1.001 * quantized_x_error(x, w, k, type) : 0.0) +
          1e-5 * magnitude + 1e-6;
      ASSERT_NEAR(got[size_t(i * n + j)], want, bound)
          << what << " [" << i << ", " << j << "]";
    }
  }
}

CONFORMANCE_CASE(qmatmul, "every weight type, every layout of x") {
  // K of one, two and three blocks: the dot products' pairs of blocks and an
  // odd block left over (a kernel that drops it once passed with K of two).
  for (QuantType type : kTypes) {
    for (const int64_t blocks : {1, 2, 3}) {
      const int64_t k =
          block_size(type) == 1 ? 37 * blocks : blocks * block_size(type);
      const int64_t m = blocks == 2 ? 1 : 3, n = blocks == 3 ? 33 : 19;
      const Weights w = make_weights(type, n, k, backend, 3);
      for (Layout layout : kLayouts) {
        const Tensor x = random_tensor({m, k}, DType::f32, backend, 4, layout);
        expect_qmatmul(qmatmul(x, w.bytes, type).to_vector<double>(),
                       to_host(x), w.values, type, m, n, k,
                       fmt::format("{} K {} {}", name(type), k, name(layout)));
      }
    }
  }
}

CONFORMANCE_CASE(qmatmul, "ggml-decoded weights, odd block counts, ragged") {
  // W's rows are ggml's three random blocks of each type
  // (quant/ggml_vectors.h) in turn, so its values come from ggml's decoder,
  // not nascent's: K of 3 and 5 blocks, N and M not multiples of any tile.
  for (const test::ggml::DequantizeVector& v : test::ggml::kDequantizeVectors) {
    const QuantType type = test::ggml::type_of(v.type);
    const std::vector<uint8_t> blocks = test::ggml::from_hex(v.bytes);
    const std::vector<float> decoded = test::ggml::floats_from_hex(v.floats);
    const int64_t bs = block_size(type), bb = block_bytes(type);
    for (const int64_t kb : {3, 5}) {
      const int64_t k = kb * bs, n = 11;
      std::vector<uint8_t> bytes;
      std::vector<float> values;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < kb; ++i) {
          const int64_t b = (j + i) % 3;
          bytes.insert(bytes.end(), blocks.begin() + b * bb,
                       blocks.begin() + (b + 1) * bb);
          values.insert(values.end(), decoded.begin() + b * bs,
                        decoded.begin() + (b + 1) * bs);
        }
      }
      const Tensor w = from_vector(bytes, {n, kb * bb}, backend);
      for (const int64_t m : {1, 5, 9}) {
        const Tensor x = random_tensor({m, k}, DType::f32, backend, 30 + m);
        expect_qmatmul(qmatmul(x, w, type).to_vector<double>(), to_host(x),
                       values, type, m, n, k,
                       fmt::format("{} K {} M {} (ggml)", v.type, k, m));
      }
    }
  }
}

CONFORMANCE_CASE(qmatmul, "one to nine rows of x, K of whole pieces") {
  // Decoding's shapes: a few rows of x, K a multiple of 8 for the float
  // types (a GPU's mat-vec kernels read them eight values at a time), and
  // the weight as a view that starts one row or three rows in (row starts at
  // every alignment the types' blocks give) and one of every other row.
  for (QuantType type : kTypes) {
    const int64_t k = block_size(type) == 1 ? 264 : 3 * block_size(type);
    const int64_t n = 37;
    const Weights w = make_weights(type, n + 3, k, backend, 11);
    for (const int64_t first : {0, 1, 3}) {
      for (const bool every_other : {false, true}) {
        const int64_t rows = every_other ? (n + 3 - first + 1) / 2 : n;
        const Tensor view =
            w.bytes.slice(0, first, first + (every_other ? 2 * rows - 1 : rows),
                          every_other ? 2 : 1);
        std::vector<float> values;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t src = first + (every_other ? 2 * r : r);
          values.insert(values.end(), w.values.begin() + src * k,
                        w.values.begin() + (src + 1) * k);
        }
        for (const int64_t m : {1, 2, 7, 8, 9}) {
          const Tensor x = random_tensor({m, k}, DType::f32, backend, 12 + m);
          expect_qmatmul(
              qmatmul(x, view, type).to_vector<double>(), to_host(x), values,
              type, m, rows, k,
              fmt::format("{} M {} from row {}{}", name(type), m, first,
                          every_other ? ", every other" : ""));
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

CONFORMANCE_CASE(quantize, "every type, every layout, byte for byte") {
  // The reference is quant.h's quantize_row on the host, whose bytes the
  // peer test finds identical to llama.cpp's quantizer.
  for (QuantType type : kTypes) {
    const int64_t k = block_size(type) == 1 ? 37 : 2 * block_size(type);
    for (DType dt : {DType::f32, DType::f64, DType::f16}) {
      for (Layout layout : kLayouts) {
        for (const Shape& shape : {Shape{1, k}, Shape{67, k}, Shape{2, 3, k}}) {
          const Tensor x = random_tensor(shape, dt, backend, 9, layout);
          const Tensor q = quantize(x, type);
          Shape want_shape = shape;
          want_shape.back() = int64_t(row_bytes(type, k));
          ASSERT_EQ(q.shape(), want_shape) << name(type);
          EXPECT_EQ(q.dtype(), DType::u8);
          EXPECT_EQ(&q.backend(), &backend);
          const std::vector<float> v = x.to_vector<float>();
          std::vector<uint8_t> want(size_t(q.numel()));
          const int64_t rows = x.numel() / k;
          for (int64_t r = 0; r < rows; ++r) {
            quant::quantize_row(type, v.data() + r * k,
                                want.data() + r * want_shape.back(), k);
          }
          EXPECT_EQ(q.to_vector<uint8_t>(), want)
              << name(type) << " " << name(dt) << " " << to_string(shape) << " "
              << name(layout);
        }
      }
    }
  }
}

CONFORMANCE_CASE(qembedding, "every type, i32 and i64 ids of several shapes") {
  for (QuantType type : kTypes) {
    const int64_t k = block_size(type) == 1 ? 37 : 2 * block_size(type);
    const int64_t n = 11;
    const Weights w = make_weights(type, n, k, backend, 7);
    // Every other row of a twice larger weight: a row stride over the row.
    const Weights w2 = make_weights(type, 2 * n, k, backend, 8);
    const Tensor odd_rows = w2.bytes.slice(0, 1, 2 * n, 2);
    struct Ids {
      std::vector<int64_t> v;
      Shape shape;
    };
    const Ids all_ids[] = {
        {{4}, {}},                       // 0-d: one row [K]
        {{0}, {1}},                      // the first row
        {{10, 3, 3, 0, 7, 10, 3}, {7}},  // repeated ids, the last row
        {{1, 2, 3, 4, 5, 6}, {2, 3}},    // 2-D (a batch of sequences)
        {{9, 0, 8, 1, 7, 2, 6, 3, 5, 4, 5, 10}, {2, 2, 3}},
        {{}, {0}},  // no ids: [0, K]
    };
    for (const Ids& ids : all_ids) {
      for (DType dt : {DType::i32, DType::i64}) {
        for (bool strided : {false, true}) {
          // strided: the ids as a transposed view of their buffer.
          Tensor t = from_vector(ids.v, ids.shape, backend).cast(dt);
          if (strided && t.ndim() >= 2) {
            t = t.transpose(-1, -2).contiguous().transpose(-1, -2);
          } else if (strided) {
            continue;
          }
          for (bool view : {false, true}) {
            const Tensor& bytes = view ? odd_rows : w.bytes;
            const std::vector<float>& values = view ? w2.values : w.values;
            const Tensor got = qembedding(bytes, t, type);
            const std::string what = fmt::format(
                "{} ids {} {}{}{}", name(type), name(dt), to_string(ids.shape),
                strided ? " transposed" : "", view ? " (odd rows)" : "");
            Shape shape = ids.shape;
            shape.push_back(k);
            ASSERT_EQ(got.shape(), shape) << what;
            EXPECT_EQ(got.dtype(), DType::f32) << what;
            const std::vector<float> g = got.to_vector<float>();
            for (size_t r = 0; r < ids.v.size(); ++r) {
              const int64_t row = view ? 2 * ids.v[r] + 1 : ids.v[r];
              for (int64_t c = 0; c < k; ++c) {
                ASSERT_EQ(g[r * size_t(k) + size_t(c)],
                          values[size_t(row * k + c)])
                    << what << " id " << r << " column " << c;
              }
            }
          }
        }
      }
    }
  }
}

CONFORMANCE_CASE(qmatmul, "several weights of different types in one call") {
  // One K for all: a multiple of every block size. A layer's q/k/v or
  // gate/up, stored in different types (as llama.cpp's mixed quantizations
  // do), and every other row of a larger weight (a row stride).
  const int64_t k = 512;
  struct Spec {
    QuantType type;
    int64_t n;
    bool odd_rows;
  };
  const Spec specs[] = {
      {QuantType::q4_k, 19, false}, {QuantType::q6_k, 7, false},
      {QuantType::q8_0, 33, true},  {QuantType::f16, 5, false},
      {QuantType::q4_0, 16, false}, {QuantType::bf16, 3, true},
      {QuantType::f32, 9, false},   {QuantType::q5_k, 17, false},
      {QuantType::q6_k, 0, false},  // No rows: an [M, 0] result.
  };
  std::vector<QuantWeight> weights;
  std::vector<std::vector<float>> values;
  uint64_t seed = 20;
  for (const Spec& s : specs) {
    if (!s.odd_rows) {
      const Weights w = make_weights(s.type, s.n, k, backend, ++seed);
      weights.push_back({w.bytes, s.type});
      values.push_back(w.values);
      continue;
    }
    const Weights w = make_weights(s.type, 2 * s.n, k, backend, ++seed);
    weights.push_back({w.bytes.slice(0, 1, 2 * s.n, 2), s.type});
    std::vector<float> v;
    for (int64_t r = 1; r < 2 * s.n; r += 2) {
      v.insert(v.end(), w.values.begin() + r * k,
               w.values.begin() + (r + 1) * k);
    }
    values.push_back(v);
  }
  // One x row (generation: mat-vec tiles over all weights as one job), 3,
  // and >= 8 (the packed paths); x of 3-D shape, transposed, and of no rows.
  const Shape x_shapes[] = {{1, k}, {3, k}, {9, k}, {2, 5, k}, {0, k}};
  for (const Shape& xs : x_shapes) {
    for (Layout layout : {Layout::contiguous, Layout::transposed}) {
      const Tensor x = random_tensor(xs, DType::f32, backend, ++seed, layout);
      const int64_t m = x.numel() / k;
      const HostTensor xh = to_host(x);
      const std::vector<Tensor> outs = qmatmul(x, weights);
      ASSERT_EQ(outs.size(), weights.size());
      for (size_t i = 0; i < weights.size(); ++i) {
        const QuantWeight& w = weights[i];
        const std::string what =
            fmt::format("{} of {} weights, x {} ({})", name(w.type),
                        weights.size(), to_string(xs), name(layout));
        Shape shape = xs;
        shape.back() = w.w.shape(0);
        ASSERT_EQ(outs[i].shape(), shape) << what;
        // Each result is the one the single form gives (ops.h), and x @ W^T.
        const std::vector<double> got = outs[i].to_vector<double>();
        EXPECT_EQ(got, qmatmul(x, w).to_vector<double>()) << what;
        expect_qmatmul(got, xh, values[i], w.type, m, w.w.shape(0), k, what);
      }
      // A single weight through the list form is the single form.
      const std::vector<Tensor> one =
          qmatmul(x, std::span<const QuantWeight>(weights.data(), 1));
      ASSERT_EQ(one.size(), 1u);
      EXPECT_EQ(one[0].to_vector<double>(), outs[0].to_vector<double>());
    }
  }
}

}  // namespace
}  // namespace nascent::conformance
