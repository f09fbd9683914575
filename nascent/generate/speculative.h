// Greedy speculative decoding: a small draft model proposes up to n_draft
// tokens one at a time, and the target checks them all in one forward (the
// logits of every proposed position, llama::SeqChunk::n_logits). The longest
// prefix the target's own argmax agrees with is kept, plus the target's
// next token, so the output is exactly the target's greedy output, in fewer
// target passes when the draft agrees often.
//
//   SpeculativeResult r = speculative_greedy(*target, *draft, tok, prompt,
//                                            {.n_draft = 4, .max_tokens = 64});
//   // r.tokens, r.n_accepted / r.n_drafted, r.n_target_passes
//
// Sampled (temperature > 0) speculative decoding is not here yet.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nascent/generate/generator.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct SpeculativeOptions {
  int32_t n_draft = 4;       // Tokens proposed per round, >= 1.
  int32_t max_tokens = 128;  // < 0: until end of generation or a full context.
  bool ignore_eos = false;
  std::vector<tokenizer::TokenId> stop_tokens;  // Beside EOS/EOT.
};

struct SpeculativeResult {
  std::vector<tokenizer::TokenId> tokens;  // The end token included.
  StopReason stop_reason = StopReason::max_tokens;
  int64_t n_drafted = 0;        // Tokens the draft proposed.
  int64_t n_accepted = 0;       // Of those, kept.
  int64_t n_target_passes = 0;  // Target forwards, the prompt's included.
};

// Both models' sequence 0 caches are reset first. ValueError when the
// vocabularies differ in size, the prompt is empty or does not fit, or
// n_draft < 1. `on_token` (optional) sees each token as it is decided; false
// stops (StopReason::callback).
SpeculativeResult speculative_greedy(
    llama::Model& target, llama::Model& draft,
    const tokenizer::Tokenizer& tokenizer,
    std::span<const tokenizer::TokenId> prompt, const SpeculativeOptions& o,
    const std::function<bool(tokenizer::TokenId)>& on_token = {});

}  // namespace nascent::generate
