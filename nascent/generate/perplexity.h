// Perplexity of a model on a text, computed as llama.cpp's llama-perplexity
// computes it, so the two programs print the same figures for one file:
// the text is tokenized whole (with BOS when the vocabulary asks for it) and
// cut into chunks of n_ctx tokens (a partial last chunk is dropped); each
// chunk runs from an empty cache with its first token replaced by BOS, and
// only the second half of each chunk is scored (every token there sees at
// least n_ctx / 2 tokens before it): token j + 1 under the logits of
// position j for n_ctx / 2 <= j < n_ctx - 1.
//
//   PerplexityResult r = perplexity(*model, tok, text, {.n_ctx = 256},
//       [](int64_t chunk, double ppl) { fmt::print("[{}]{:.4f},", chunk, ppl);
//       });
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct PerplexityOptions {
  int64_t n_ctx = 0;     // Tokens per chunk; 0: the model's context.
  int64_t n_chunks = 0;  // Chunks to score at most; 0: all.
};

struct PerplexityResult {
  double ppl = 0.0;          // exp(mean negative log-likelihood).
  double uncertainty = 0.0;  // llama-perplexity's "+/-": standard error.
  int64_t chunks = 0;
  int64_t scored = 0;           // Tokens scored.
  int64_t tokens = 0;           // Tokens of the whole text.
  std::vector<double> running;  // The perplexity after each chunk.
};

// ValueError when the text has fewer than 2 * n_ctx tokens (llama-perplexity
// refuses those too) or n_ctx exceeds the model's context. `on_chunk`, if
// given, hears the chunk number (from 1) and the running perplexity.
PerplexityResult perplexity(
    llama::Model& model, const tokenizer::Tokenizer& tokenizer,
    std::string_view text, const PerplexityOptions& options = {},
    const std::function<void(int64_t, double)>& on_chunk = {});

}  // namespace nascent::generate
