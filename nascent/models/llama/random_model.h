// Random-weight LLaMA models written as GGUF files that llama.cpp loads: the
// fixtures of the peer-comparison tests and the benchmarks (no trained
// weights can be downloaded here).
//
// Every 2-D weight is normal * 1/sqrt(fan_in) (fan_in: the row length), so
// activations keep unit scale through the layers and the logits stay
// well-conditioned; norm weights are 1 + 0.1 * normal. Values come from the
// counter-based normal op (Philox) seeded per (seed, tensor), so a file is
// the same whatever the thread count or backend.
#pragma once

#include <cstdint>
#include <string>

#include "nascent/core/quant.h"
#include "nascent/io/gguf.h"
#include "nascent/models/llama/model.h"

namespace nascent::llama {

struct RandomModelConfig {
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_ff = 160;
  // Ignored when vocab_file is set (the file's vocabulary size is used).
  int64_t n_vocab = 320;
  int64_t n_ctx = 512;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  // No output.weight: the output projection is token_embd.weight.
  bool tied_output = false;
  uint64_t seed = 1;
  // Type of the 2-D weights (norms are always f32). Row lengths must be whole
  // blocks of it.
  QuantType type = QuantType::f32;
  // A GGUF file whose tokenizer.* keys are copied (e.g. llama.cpp's
  // ggml-vocab-llama-spm.gguf, the 32000-token llama-2 vocabulary); when
  // empty a SentencePiece vocabulary of n_vocab tokens is synthesised.
  std::string vocab_file;
  // Jinja source written as tokenizer.chat_template (replacing the vocab
  // file's); empty: the vocab file's, if any.
  std::string chat_template;
};

// The tokenizer.* keys of a valid SentencePiece ("llama") vocabulary of
// n_vocab tokens: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then
// characters and character pairs with decreasing scores. ValueError when
// n_vocab < 300.
gguf::Metadata synthetic_spm_vocab(int64_t n_vocab);

// The whole metadata of the model `config` describes (llama.* hyper-
// parameters, general.*, tokenizer.*). ValueError naming the field for an
// inconsistent config (heads not dividing the width, GQA not dividing the
// heads, an odd head size, sizes not positive).
gguf::Metadata random_model_metadata(const RandomModelConfig& config);

// Writes the model to `path` (atomically, through gguf::Writer; each tensor
// is generated while it is written, by ops of the default backend).
void write_random_model(const RandomModelConfig& config,
                        const std::string& path);

}  // namespace nascent::llama
