// A GGUF tensor's values as f32, decoded with the reference dequantizer:
// what the llama tests compare written and quantized files against.
#pragma once

#include <vector>

#include "nascent/core/quant.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/quant/codec.h"

namespace nascent::testing {

inline std::vector<float> floats(const gguf::Reader& r,
                                 const gguf::TensorInfo& t) {
  std::vector<float> out(size_t(t.numel()));
  int64_t cols = t.shape.back();
  auto bytes = r.tensor_data(t);
  size_t stride = row_bytes(t.type, cols);
  for (int64_t row = 0; row < t.numel() / cols; ++row) {
    quant::dequantize_row(t.type, bytes.data() + size_t(row) * stride,
                          out.data() + row * cols, cols);
  }
  return out;
}

}  // namespace nascent::testing
