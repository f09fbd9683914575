// Quantized storage types of GGML and GGUF files: their sizes, names and
// numeric ids. The conversions between f32 and blocks live in
// nascent/quant/ (codec.h), outside core.
//
// A row of n values of a block type is n / block_size consecutive blocks of
// block_bytes each, laid out bit for bit as in ggml (ggml-common.h; the
// structs are in nascent/quant/blocks.h), so rows move between nascent and
// llama.cpp files unchanged. f32, f16 and bf16 are "blocks" of one value.
//
// In tensors, a matrix of such rows is a u8 tensor [rows, row_bytes] plus its
// QuantType (ops.h: qmatmul, dequantize, quantize).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace nascent {

enum class QuantType : uint8_t {
  f32,
  f16,
  bf16,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  q8_0,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  q8_k,  // ggml's activation format for k-quant dot products.
};
inline constexpr int kNumQuantTypes = 14;

struct QuantTypeInfo {
  QuantType type;
  const char* name;     // ggml's spelling: "f16", "q4_0", "q4_K".
  uint32_t ggml_type;   // The tensor type id GGUF files store.
  int64_t block_size;   // Values per block.
  int64_t block_bytes;  // Bytes per block.
};

const QuantTypeInfo& info(QuantType type);
inline const char* name(QuantType type) {
  return info(type).name;
}
inline int64_t block_size(QuantType type) {
  return info(type).block_size;
}
inline int64_t block_bytes(QuantType type) {
  return info(type).block_bytes;
}

// The type of a GGUF tensor type id; nullopt for ids nascent does not know
// (the removed 4 and 5, the i-quants, integer tensors).
std::optional<QuantType> quant_type_from_ggml(uint32_t id);
// By name, any case ("Q4_K", "q4_k", "bf16"); nullopt if unknown.
std::optional<QuantType> quant_type_from_name(std::string_view name);

// Bytes of a row of n values. ShapeError naming the type and n unless n is
// a non-negative multiple of the block size; ValueError if the byte count
// overflows.
size_t row_bytes(QuantType type, int64_t n);
// ShapeError naming `op`, the type and n unless n is a non-negative
// multiple of the block size.
void check_whole_blocks(const char* op, QuantType type, int64_t n);

}  // namespace nascent
