// Draft, verify, accept. The target's cache stays valid up to the last
// accepted token because forward() truncates to the n_past it is given; the
// draft's cache keeps what it was fed that the accepted tokens agree with.
#include "nascent/generate/speculative.h"

#include <algorithm>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::generate {
namespace {

using tokenizer::TokenId;

// Greedy as Sampler does it with temperature 0 and no penalties: the
// highest logit among the tokenizer's ids, the lowest id on a tie.
TokenId argmax_row(const std::vector<float>& v, size_t row, size_t n_vocab,
                   size_t n_tokens) {
  const float* r = v.data() + row * n_vocab;
  size_t best = 0;
  for (size_t i = 1; i < n_tokens; ++i) {
    if (r[i] > r[best]) best = i;
  }
  return TokenId(best);
}

}  // namespace

SpeculativeResult speculative_greedy(
    llama::Model& target, llama::Model& draft, const tokenizer::Tokenizer& tok,
    std::span<const TokenId> prompt, const SpeculativeOptions& o,
    const std::function<bool(TokenId)>& on_token) {
  const int64_t n_ctx = std::min(target.n_ctx(), draft.n_ctx());
  if (target.config().n_vocab != draft.config().n_vocab) {
    throw ValueError(fmt::format(
        "speculative decoding: the draft's vocabulary ({}) is not the "
        "target's ({})",
        draft.config().n_vocab, target.config().n_vocab));
  }
  if (o.n_draft < 1) {
    throw ValueError(
        fmt::format("speculative decoding: n_draft = {} < 1", o.n_draft));
  }
  if (prompt.empty() || int64_t(prompt.size()) > n_ctx) {
    throw ValueError(fmt::format(
        "speculative decoding: the prompt has {} tokens; it needs 1 to {}",
        prompt.size(), n_ctx));
  }
  const size_t n_vocab = size_t(target.config().n_vocab);
  const size_t n_tokens = std::min(tok.size(), n_vocab);
  SpeculativeResult r;
  target.reset();
  draft.reset();
  std::vector<TokenId> all(prompt.begin(), prompt.end());
  TokenId next = argmax_row(target.forward(prompt, 0).to_vector<float>(), 0,
                            n_vocab, n_tokens);
  ++r.n_target_passes;
  draft.forward(prompt, 0);
  int64_t n_draft_past = int64_t(prompt.size());

  // Takes a decided token; false when generation ends with it.
  auto emit = [&](TokenId id) {
    r.tokens.push_back(id);
    const bool end =
        !o.ignore_eos &&
        (tok.is_eog(id) || std::find(o.stop_tokens.begin(), o.stop_tokens.end(),
                                     id) != o.stop_tokens.end());
    if (end) {
      r.stop_reason = StopReason::eog;
      return false;
    }
    if (on_token && !on_token(id)) {
      r.stop_reason = StopReason::callback;
      return false;
    }
    if (o.max_tokens >= 0 && int64_t(r.tokens.size()) >= o.max_tokens) {
      r.stop_reason = StopReason::max_tokens;
      return false;
    }
    if (int64_t(all.size()) >= n_ctx) {
      r.stop_reason = StopReason::context_full;
      return false;
    }
    all.push_back(id);
    return true;
  };

  if (o.max_tokens == 0) return r;
  while (emit(next)) {
    // `next` is the last of `all`, not yet evaluated by either model.
    const int64_t k = std::min<int64_t>(o.n_draft, n_ctx - int64_t(all.size()));
    std::vector<TokenId> proposals;
    std::vector<TokenId> fed(all.begin() + n_draft_past, all.end());
    for (int64_t j = 0; j < k; ++j) {
      const Tensor lg = draft.forward(fed, n_draft_past);
      n_draft_past += int64_t(fed.size());
      proposals.push_back(
          argmax_row(lg.to_vector<float>(), 0, n_vocab, n_tokens));
      fed = {proposals.back()};
    }
    std::vector<TokenId> verify{next};
    verify.insert(verify.end(), proposals.begin(), proposals.end());
    const llama::SeqChunk chunk{.seq = 0,
                                .n_past = int64_t(all.size()) - 1,
                                .tokens = verify,
                                .n_logits = int64_t(verify.size())};
    const std::vector<float> rows =
        target.forward_batch({&chunk, 1}).to_vector<float>();
    ++r.n_target_passes;
    int64_t accepted = 0;
    while (accepted < k &&
           argmax_row(rows, size_t(accepted), n_vocab, n_tokens) ==
               proposals[size_t(accepted)]) {
      ++accepted;
    }
    r.n_drafted += k;
    r.n_accepted += accepted;
    // The draft was fed all, then proposals but the last.
    const int64_t old_size = int64_t(all.size());
    if (k > 0) n_draft_past = old_size + std::min(accepted, k - 1);
    bool going = true;
    for (int64_t j = 0; j < accepted && going; ++j) {
      going = emit(proposals[size_t(j)]);
    }
    if (!going) break;
    next = argmax_row(rows, size_t(accepted), n_vocab, n_tokens);
  }
  return r;
}

}  // namespace nascent::generate
