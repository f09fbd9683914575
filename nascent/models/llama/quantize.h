// `nascent quantize`: a LLaMA GGUF file from f32/f16/bf16 weights to a
// quantized one, with llama.cpp's file types (llama_ftype) and its per-tensor
// choices (llama_tensor_get_type in llama.cpp's src/llama-quant.cpp): the
// output projection in q6_K, more bits for attn_v and ffn_down in some layers
// of the _M mixes, norms and other 1-D tensors left as they are, fallbacks
// for rows that are not whole k-quant blocks (llama.cpp 0.3.36's
// tensor_type_fallback, with --pure too). Without an importance matrix
// llama.cpp quantizes with ggml's reference quantizers, which core/quant.h
// follows, so both write the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nascent/core/quant.h"
#include "nascent/io/gguf.h"

namespace nascent::llama {

// llama.cpp's llama_ftype values (general.file_type).
enum class FileType : uint32_t {
  all_f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 7,
  q5_0 = 8,
  q5_1 = 9,
  q2_k = 10,
  q3_k_s = 11,
  q3_k_m = 12,
  q3_k_l = 13,
  q4_k_s = 14,
  q4_k_m = 15,
  q5_k_s = 16,
  q5_k_m = 17,
  q6_k = 18,
  bf16 = 32,
};

// llama-quantize's names, any case: "q4_k_m", "Q8_0", "f16"; "q3_k", "q4_k"
// and "q5_k" are the _M mixes as in llama-quantize. nullopt if unknown.
std::optional<FileType> file_type_from_name(std::string_view name);
// "Q4_K_M" and so on (llama-quantize's spelling).
const char* name(FileType type);
// The names file_type_from_name accepts, for help and error messages.
std::string file_type_names();
// The type most weights get (q4_K for Q4_K_M).
QuantType default_type(FileType type);

struct QuantizeOptions {
  FileType type = FileType::q8_0;
  // Every quantized tensor gets default_type (llama-quantize --pure).
  bool pure = false;
  // Quantized inputs are dequantized and quantized again only when set
  // (llama-quantize --allow-requantize).
  bool allow_requantize = false;
  // Override the types of output.weight and token_embd.weight.
  std::optional<QuantType> output_type;
  std::optional<QuantType> token_embedding_type;
};

// What happens to one tensor: `to == from` means it is copied.
struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;
  QuantType from;
  QuantType to;
  // to was not the rule's choice: the rows are not whole blocks of it.
  bool fallback = false;
};

// The type of every tensor of a llama model (general.architecture llama,
// llama.block_count, llama.attention.head_count[_kv]), in file order.
// ValueError when a tensor cannot take the type it needs (rows that are no
// whole blocks of an --output-tensor-type or --token-embedding-type, or a
// quantized input without allow_requantize), naming the tensor; FormatError
// for missing metadata.
std::vector<TensorPlan> plan_quantization(
    const gguf::Metadata& metadata,
    const std::vector<gguf::TensorInfo>& tensors,
    const QuantizeOptions& options);

struct QuantizeResult {
  std::vector<TensorPlan> plan;
  uint64_t bytes_in = 0;   // Tensor data of the input.
  uint64_t bytes_out = 0;  // And of the output.
};

// Reads `in` (mapped), writes `out` atomically: the metadata copied with
// general.file_type and general.quantization_version set, each tensor
// converted row by row on the CPU backend's threads while it is written.
// `in` and `out` may be the same path.
QuantizeResult quantize_model(const std::string& in, const std::string& out,
                              const QuantizeOptions& options);

}  // namespace nascent::llama
