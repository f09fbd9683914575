// Speculative decoding: a small draft model proposes up to n_draft tokens
// one at a time, and the target checks them all in one forward (the logits
// of every proposed position, llama::SeqChunk::n_logits).
//
// Greedy (speculative_greedy): the longest prefix the target's own argmax
// agrees with is kept, plus the target's next token, so the output is
// exactly the target's greedy output, in fewer target passes when the draft
// agrees often.
//
// Sampled (speculative_sample, SpeculativeSampler): the rule of Leviathan et
// al. and Chen et al. (2023). The draft samples x ~ q, its distribution as
// Sampler would draw from it; the target keeps x with probability
// min(1, p(x) / q(x)), and at the first refusal samples from
// normalize(max(0, p - q)) instead; when all are kept it samples one more
// from p. Each token then follows p, the target's own sampling
// distribution (temperature, filters, penalties), whatever the draft.
// serve::Scheduler runs the same rule per request, its draft steps and
// verifications batched over the requests.
//
//   SpeculativeResult r = speculative_greedy(*target, *draft, tok, prompt,
//                                            {.n_draft = 4, .max_tokens = 64});
//   // r.tokens, r.n_accepted / r.n_drafted, r.n_target_passes
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nascent/generate/generator.h"
#include "nascent/generate/sampler.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct SpeculativeOptions {
  int32_t n_draft = 4;       // Tokens proposed per round, >= 1.
  int32_t max_tokens = 128;  // < 0: until end of generation or a full context.
  bool ignore_eos = false;
  std::vector<tokenizer::TokenId> stop_tokens;  // Beside EOS/EOT.
  // speculative_sample's; speculative_greedy ignores it.
  SamplingOptions sampling;
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

// The same loop with the sampled rule (o.sampling; temperature <= 0 is the
// greedy rule with penalties applied, as Sampler does). Seeded: the same
// options give the same tokens. Errors as speculative_greedy, and Sampler's
// for bad sampling options.
SpeculativeResult speculative_sample(
    llama::Model& target, llama::Model& draft,
    const tokenizer::Tokenizer& tokenizer,
    std::span<const tokenizer::TokenId> prompt, const SpeculativeOptions& o,
    const std::function<bool(tokenizer::TokenId)>& on_token = {});

// The acceptance rule of one sequence, its state kept from round to round:
// the penalties' history (both models sample with the same options) and two
// draw sequences of the seed, the draft's and the target's.
//
//   SpeculativeSampler s(options, tok.size());
//   for (id : prompt) s.accept(id);
//   x = s.propose(draft_logits);  // ... up to n_draft times
//   out = s.verify(target_rows, n_vocab);  // proposals + 1 rows
//   for (id : out) s.accept(id);  // Those the sequence keeps.
class SpeculativeSampler {
 public:
  // Samples among the first n_tokens ids of each logits row. ValueError as
  // Sampler for bad options.
  SpeculativeSampler(SamplingOptions options, size_t n_tokens);

  // A token of the sequence: the prompt's, then each one kept.
  void accept(tokenizer::TokenId id);
  // The draft's next proposal, from its logits at that position.
  tokenizer::TokenId propose(std::span<const float> draft_logits);
  // Judges the proposals made since the last verify() with the target's
  // logits at those positions and the one after (rows of `stride` floats,
  // proposals + 1 of them). Returns the kept proposals, then the target's
  // own token; does not accept() them. The proposals are forgotten.
  std::vector<tokenizer::TokenId> verify(std::span<const float> target_rows,
                                         size_t stride);
  size_t n_proposed() const { return proposals_.size(); }
  bool greedy() const { return history_.options().temperature <= 0.0f; }

 private:
  double draw(uint64_t key, uint64_t& counter);

  // The history only (draws come from draw()); it never samples, so its
  // copies carry no scratch.
  Sampler history_;
  Sampler round_;   // history_ plus this round's proposals (q's penalties).
  Sampler target_;  // The same for p, in verify().
  size_t n_tokens_;
  std::vector<tokenizer::TokenId> proposals_;
  std::vector<std::vector<float>> q_;  // The draft's distribution of each.
  uint64_t draft_draws_ = 0;
  uint64_t target_draws_ = 0;
};

}  // namespace nascent::generate
