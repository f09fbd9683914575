// The tensor element types a GGUF file can name (ggml's type ids) with the
// two numbers the reader needs: elements per block and bytes per block.
//
// This table is the reader's own until the quantized block formats land in
// core (nascent::QuantType); it holds ids and sizes only, no block layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nascent::gguf {

// ggml's ids; the gaps are types ggml has removed.
enum class TensorType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
};

struct TensorTypeTraits {
  TensorType type;
  std::string_view name;  // As ggml prints it: "F32", "Q4_K".
  uint32_t block_size;    // Elements per block (1 for plain types).
  uint32_t type_size;     // Bytes per block.
};

// The traits of a known id, or nothing for an id this table does not know.
const TensorTypeTraits* find_tensor_type(uint32_t id);
// Looks a type up by its name, case-insensitively ("q8_0", "F16").
std::optional<TensorType> tensor_type_from_name(std::string_view name);
// Traits of a valid type (one that find_tensor_type accepts).
const TensorTypeTraits& traits(TensorType type);
inline std::string_view name(TensorType type) {
  return traits(type).name;
}

}  // namespace nascent::gguf
