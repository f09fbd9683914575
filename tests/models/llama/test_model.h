// Small random-weight LLaMA models for tests: a GGUF writer (our
// gguf::Writer) and a float64 reference forward pass computed from the
// file's dequantized weights, written from the architecture's definition
// independently of nascent's model code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nascent/core/quant.h"
#include "nascent/io/gguf.h"

namespace nascent::test {

struct ModelSpec {
  std::string arch = "llama";  // "llama" or "qwen2" (q/k/v biases, NEOX).
  int64_t n_vocab = 37;
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 0;  // 0: n_embd / n_head (no key_length key).
  int64_t n_ff = 96;
  int64_t n_ctx_train = 256;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int64_t rope_dim = 0;             // 0: head_dim (no dimension_count key).
  float rope_scale = 0.0f;          // > 0: linear scaling by this factor.
  bool rope_freqs = false;          // A rope_freqs.weight tensor.
  bool tied = false;                // No output.weight.
  QuantType type = QuantType::f32;  // Of the 2-D weights.
  uint64_t seed = 1;
  // Tensors to leave out, or to write with a wrong shape (one more row).
  std::vector<std::string> omit, misshape;
  // Extra metadata (a tokenizer).
  gguf::Metadata extra;
};

void write_model(const ModelSpec& spec, const std::string& path);

// Logits [tokens.size()][n_vocab] of every position of one sequence, in
// float64, from the weights of the GGUF file at `path`.
std::vector<std::vector<double>> reference_logits(
    const std::string& path, const std::vector<int32_t>& tokens);

// A byte-level SentencePiece vocabulary: <unk> <s> </s>, the 256 byte
// tokens <0x00>..<0xFF>, then `pieces` (normal tokens).
gguf::Metadata byte_vocab(const std::vector<std::string>& pieces);

}  // namespace nascent::test
