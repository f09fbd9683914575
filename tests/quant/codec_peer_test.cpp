// nascent's reference conversions against gguf-py, the Python package of
// llama.cpp's maintainers (vectors in data/quant_peer_vectors.inc, made by
// data/make_quant_peer_vectors.py): the same input gives the same block
// bytes, and the same bytes the same values, bit for bit.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/core/quant.h"
#include "nascent/quant/codec.h"

namespace nascent::quant {
namespace {

struct PeerVector {
  const char* type;
  int64_t values;
  const char* input;   // Hex bytes (f32 values for quantize).
  const char* output;  // Hex bytes (f32 values for dequantize).
};

#include "quant/data/quant_peer_vectors.inc"

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = uint8_t(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

std::vector<float> floats_from_hex(const std::string& hex) {
  const std::vector<uint8_t> bytes = from_hex(hex);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

QuantType type_of(const char* name) {
  const std::optional<QuantType> t = quant_type_from_name(name);
  if (!t) throw std::runtime_error(std::string("unknown type ") + name);
  return *t;
}

TEST(QuantPeer, QuantizeMatchesGgufPy) {
  for (const PeerVector& v : kQuantizeVectors) {
    const QuantType type = type_of(v.type);
    const std::vector<float> x = floats_from_hex(v.input);
    ASSERT_EQ(int64_t(x.size()), v.values);
    std::vector<uint8_t> got(row_bytes(type, v.values));
    quantize_row(type, x.data(), got.data(), v.values);
    EXPECT_EQ(got, from_hex(v.output)) << v.type;
  }
}

TEST(QuantPeer, DequantizeMatchesGgufPy) {
  for (const PeerVector& v : kDequantizeVectors) {
    const QuantType type = type_of(v.type);
    const std::vector<uint8_t> blocks = from_hex(v.input);
    ASSERT_EQ(blocks.size(), row_bytes(type, v.values)) << v.type;
    const std::vector<float> want = floats_from_hex(v.output);
    std::vector<float> got(size_t(v.values), 0.0f);
    dequantize_row(type, blocks.data(), got.data(), v.values);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << v.type << " value " << i;
    }
  }
}

}  // namespace
}  // namespace nascent::quant
