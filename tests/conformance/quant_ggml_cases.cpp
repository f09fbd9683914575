// Conformance cases of the quant family against ggml's own results
// (quant/ggml_vectors.h), not nascent's codecs: quantize gives ggml's bytes
// for whole pattern rows, rows of one and of three blocks (odd counts) in
// ragged numbers and the 1024-block bulk; dequantize gives ggml's values for
// random blocks laid out as one row or as several, and for the pattern's
// bytes.
#include "conformance/reference.h"
#include "conformance/registry.h"
#include "quant/ggml_vectors.h"

namespace nascent::conformance {
namespace {

using namespace test::ggml;

Tensor bytes_tensor(const std::vector<uint8_t>& bytes, int64_t rows,
                    Backend& backend) {
  const int64_t cols = int64_t(bytes.size()) / rows;
  return from_vector(bytes, {rows, cols}, backend);
}

CONFORMANCE_CASE(quantize, "ggml's bytes: pattern, odd block counts, bulk") {
  const std::vector<float> x = pattern();
  for (const QuantizeVector& v : kQuantizeVectors) {
    const QuantType type = type_of(v.type);
    const Tensor q =
        quantize(from_vector(x, {kPatternRows, kPatternCols}, backend), type);
    const std::vector<uint8_t> got = q.to_vector<uint8_t>();
    if (v.bytes == nullptr) {  // f16, bf16: known by their hash.
      EXPECT_EQ(fnv1a(got.data(), got.size()), v.bytes_hash) << v.type;
      continue;
    }
    const std::vector<uint8_t> want = from_hex(v.bytes);
    EXPECT_TRUE(got == want) << v.type;
    // Blocks are independent, so rows of one or three blocks of the same
    // values give a prefix of ggml's bytes: 5 or 7 rows (a ragged count
    // for the threads and the row tiles).
    for (const int64_t blocks : {1, 3}) {
      const int64_t k = blocks * block_size(type);
      const int64_t rows = std::min<int64_t>(int64_t(x.size()) / k, 7);
      const std::vector<float> head(x.begin(), x.begin() + rows * k);
      const std::vector<uint8_t> part =
          quantize(from_vector(head, {rows, k}, backend), type)
              .to_vector<uint8_t>();
      ASSERT_LE(part.size(), want.size());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), want.begin()))
          << v.type << ": " << rows << " rows of " << blocks << " blocks";
    }
  }
  const std::vector<float> b = bulk();
  const Tensor xb = from_vector(b, {kBulkRows, kBulkCols}, backend);
  for (const BulkVector& v : kBulkVectors) {
    const std::vector<uint8_t> got =
        quantize(xb, type_of(v.type)).to_vector<uint8_t>();
    EXPECT_EQ(fnv1a(got.data(), got.size()), v.bytes_hash) << v.type;
  }
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(test::ggml::float_bits(got[i]), test::ggml::float_bits(want[i]))
        << what << " value " << i << ": " << got[i] << " vs " << want[i];
  }
}

CONFORMANCE_CASE(dequantize, "ggml's values: random blocks, pattern bytes") {
  for (const DequantizeVector& v : kDequantizeVectors) {
    const QuantType type = type_of(v.type);
    const std::vector<uint8_t> bytes = from_hex(v.bytes);
    const std::vector<float> want = floats_from_hex(v.floats);
    // Three blocks as one row, and as three rows of one.
    for (const int64_t rows : {1, 3}) {
      const Tensor t = bytes_tensor(bytes, rows, backend);
      const Tensor y = dequantize(t, type);
      ASSERT_EQ(y.shape(), (Shape{rows, v.values / rows})) << v.type;
      expect_bits(y.to_vector<float>(), want,
                  fmt::format("{} in {} rows", v.type, rows));
    }
    // Rows 0 and 2 through a strided view.
    const Tensor view = bytes_tensor(bytes, 3, backend).slice(0, 0, 3, 2);
    const int64_t k = block_size(type);
    std::vector<float> ends(want.begin(), want.begin() + k);
    ends.insert(ends.end(), want.end() - k, want.end());
    expect_bits(dequantize(view, type).to_vector<float>(), ends,
                fmt::format("{} rows 0 and 2 of 3", v.type));
  }
  for (const QuantizeVector& v : kQuantizeVectors) {
    if (v.bytes == nullptr) continue;
    const std::vector<float> y =
        dequantize(bytes_tensor(from_hex(v.bytes), kPatternRows, backend),
                   type_of(v.type))
            .to_vector<float>();
    EXPECT_EQ(y.size(), size_t(kPatternRows) * kPatternCols);
    EXPECT_EQ(fnv1a(y.data(), y.size() * 4), v.values_hash) << v.type;
  }
}

}  // namespace
}  // namespace nascent::conformance
