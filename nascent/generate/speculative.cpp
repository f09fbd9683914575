// Draft, verify, accept. The target's cache stays valid up to the last
// accepted token because forward() truncates to the n_past it is given; the
// draft's cache keeps what it was fed that the accepted tokens agree with.
#include "nascent/generate/speculative.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/random.h"

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

// The context both models share; ValueError for the bad calls.
int64_t check_inputs(const llama::Model& target, const llama::Model& draft,
                     std::span<const TokenId> prompt,
                     const SpeculativeOptions& o) {
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
  return n_ctx;
}

// A token drawn from unnormalised probabilities by a uniform u in [0, 1).
TokenId pick_from(std::span<const float> p, double u) {
  double total = 0;
  for (const float x : p) total += x;
  const double target = u * total;
  double cum = 0;
  size_t last = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0f) continue;
    cum += p[i];
    last = i;
    if (target < cum) return TokenId(i);
  }
  return TokenId(last);  // Rounding at the very top.
}

// Takes a decided token; false when generation ends with it.
struct Emitter {
  const tokenizer::Tokenizer& tok;
  const SpeculativeOptions& o;
  const std::function<bool(TokenId)>& on_token;
  int64_t n_ctx;
  SpeculativeResult& r;
  std::vector<TokenId>& all;

  bool operator()(TokenId id) {
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
  }
};

// The rounds both rules share: the draft proposes up to n_draft tokens, the
// target judges them in one forward, the kept ones and the target's own
// next token are emitted, and the draft's cache follows. The rule decides
// the first token (first), each proposal (propose), what is kept of a round
// (verify: the kept proposals, then the target's token), sees each token
// the sequence keeps (accept) and may leave proposals out that max_tokens
// has no room for (kCapByMaxTokens).
template <class Rule>
SpeculativeResult run_rounds(llama::Model& target, llama::Model& draft,
                             const tokenizer::Tokenizer& tok, int64_t n_ctx,
                             std::span<const TokenId> prompt,
                             const SpeculativeOptions& o,
                             const std::function<bool(TokenId)>& on_token,
                             Rule& rule) {
  SpeculativeResult r;
  target.reset();
  draft.reset();
  std::vector<TokenId> all(prompt.begin(), prompt.end());
  TokenId next = rule.first(target.forward(prompt, 0).to_vector<float>());
  ++r.n_target_passes;
  draft.forward(prompt, 0);
  int64_t n_draft_past = int64_t(prompt.size());
  Emitter emit{tok, o, on_token, n_ctx, r, all};

  if (o.max_tokens == 0) return r;
  while (emit(next)) {
    rule.accept(next);
    // `next` is the last of `all`, not yet evaluated by either model.
    int64_t k = std::min<int64_t>(o.n_draft, n_ctx - int64_t(all.size()));
    if (Rule::kCapByMaxTokens && o.max_tokens >= 0) {
      k = std::max<int64_t>(
          0, std::min<int64_t>(k, o.max_tokens - int64_t(r.tokens.size()) - 1));
    }
    std::vector<TokenId> verify{next};
    std::vector<TokenId> fed(all.begin() + n_draft_past, all.end());
    for (int64_t j = 0; j < k; ++j) {
      const std::vector<float> lg =
          draft.forward(fed, n_draft_past).to_vector<float>();
      n_draft_past += int64_t(fed.size());
      verify.push_back(rule.propose(lg));
      fed = {verify.back()};
    }
    const llama::SeqChunk chunk{.seq = 0,
                                .n_past = int64_t(all.size()) - 1,
                                .tokens = verify,
                                .n_logits = int64_t(verify.size())};
    const std::vector<TokenId> out =
        rule.verify(target.forward_batch({&chunk, 1}).to_vector<float>(),
                    std::span(verify).subspan(1));
    ++r.n_target_passes;
    const int64_t accepted = int64_t(out.size()) - 1;
    r.n_drafted += k;
    r.n_accepted += accepted;
    // The draft was fed all, then the proposals but the last.
    if (k > 0) n_draft_past = int64_t(all.size()) + std::min(accepted, k - 1);
    bool going = true;
    for (int64_t j = 0; j < accepted && going; ++j) {
      going = emit(out[size_t(j)]);
      if (going) rule.accept(out[size_t(j)]);
    }
    if (!going) break;
    next = out.back();
  }
  return r;
}

// The target's argmax: the longest agreeing prefix of the proposals.
struct GreedyRule {
  static constexpr bool kCapByMaxTokens = false;
  size_t n_vocab, n_tokens;

  TokenId first(const std::vector<float>& rows) const {
    return argmax_row(rows, 0, n_vocab, n_tokens);
  }
  TokenId propose(const std::vector<float>& lg) const {
    return argmax_row(lg, 0, n_vocab, n_tokens);
  }
  std::vector<TokenId> verify(const std::vector<float>& rows,
                              std::span<const TokenId> proposals) const {
    std::vector<TokenId> out;
    for (const TokenId x : proposals) {
      if (argmax_row(rows, out.size(), n_vocab, n_tokens) != x) break;
      out.push_back(x);
    }
    out.push_back(argmax_row(rows, out.size(), n_vocab, n_tokens));
    return out;
  }
  void accept(TokenId) const {}
};

// SpeculativeSampler's rule. A round gives at most k + 1 tokens: no more
// proposals than max_tokens has room for (serve::Scheduler's rule too, so a
// seed gives the same tokens there).
struct SampledRule {
  static constexpr bool kCapByMaxTokens = true;
  SpeculativeSampler& sampler;
  size_t n_vocab;

  TokenId first(const std::vector<float>& rows) {
    return sampler.verify(rows, n_vocab)[0];  // No proposals yet.
  }
  TokenId propose(const std::vector<float>& lg) { return sampler.propose(lg); }
  std::vector<TokenId> verify(const std::vector<float>& rows,
                              std::span<const TokenId>) {
    return sampler.verify(rows, n_vocab);
  }
  void accept(TokenId id) { sampler.accept(id); }
};

}  // namespace

SpeculativeResult speculative_greedy(
    llama::Model& target, llama::Model& draft, const tokenizer::Tokenizer& tok,
    std::span<const TokenId> prompt, const SpeculativeOptions& o,
    const std::function<bool(TokenId)>& on_token) {
  const int64_t n_ctx = check_inputs(target, draft, prompt, o);
  const size_t n_vocab = size_t(target.config().n_vocab);
  GreedyRule rule{n_vocab, std::min(tok.size(), n_vocab)};
  return run_rounds(target, draft, tok, n_ctx, prompt, o, on_token, rule);
}

SpeculativeResult speculative_sample(
    llama::Model& target, llama::Model& draft, const tokenizer::Tokenizer& tok,
    std::span<const TokenId> prompt, const SpeculativeOptions& o,
    const std::function<bool(TokenId)>& on_token) {
  const int64_t n_ctx = check_inputs(target, draft, prompt, o);
  const size_t n_vocab = size_t(target.config().n_vocab);
  SpeculativeSampler sampler(o.sampling, std::min(tok.size(), n_vocab));
  for (const TokenId id : prompt) sampler.accept(id);
  SampledRule rule{sampler, n_vocab};
  return run_rounds(target, draft, tok, n_ctx, prompt, o, on_token, rule);
}

SpeculativeSampler::SpeculativeSampler(SamplingOptions options, size_t n_tokens)
    : history_(options),
      round_(options),
      target_(options),
      n_tokens_(n_tokens) {}

void SpeculativeSampler::accept(TokenId id) {
  history_.accept(id);
}

double SpeculativeSampler::draw(uint64_t key, uint64_t& counter) {
  const std::array<uint32_t, 4> r = philox4x32(counter++, key);
  return uint_to_unit_double(r[0], r[1]);
}

TokenId SpeculativeSampler::propose(std::span<const float> draft_logits) {
  if (proposals_.empty()) round_ = history_;
  q_.push_back(round_.probabilities(draft_logits.first(n_tokens_)));
  // The draft's draws use another key than the target's: a proposal and
  // its acceptance test must not share a uniform.
  const uint64_t key = history_.options().seed ^ 0x9E3779B97F4A7C15ull;
  const TokenId x = pick_from(q_.back(), draw(key, draft_draws_));
  round_.accept(x);
  proposals_.push_back(x);
  return x;
}

std::vector<TokenId> SpeculativeSampler::verify(
    std::span<const float> target_rows, size_t stride) {
  const uint64_t key = history_.options().seed;
  if (target_rows.size() < (proposals_.size() + 1) * stride) {
    throw ValueError(
        fmt::format("SpeculativeSampler::verify: {} logits for {} rows of {}",
                    target_rows.size(), proposals_.size() + 1, stride));
  }
  target_ = history_;
  std::vector<TokenId> out;
  for (size_t j = 0; j <= proposals_.size(); ++j) {
    const std::vector<float> p =
        target_.probabilities(target_rows.subspan(j * stride, n_tokens_));
    if (j == proposals_.size()) {
      out.push_back(pick_from(p, draw(key, target_draws_)));  // All kept.
      break;
    }
    const TokenId x = proposals_[j];
    const std::vector<float>& q = q_[j];
    // Keep x with probability min(1, p(x) / q(x)); q(x) > 0 as x ~ q.
    if (draw(key, target_draws_) * q[size_t(x)] < p[size_t(x)]) {
      out.push_back(x);
      target_.accept(x);
      continue;
    }
    // Refused: draw from the residual max(0, p - q), not empty since
    // p(x) < q(x) and both sum to 1 (unless by rounding: then from p).
    std::vector<float> residual(p.size());
    double total = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      residual[i] = std::max(0.0f, p[i] - q[i]);
      total += residual[i];
    }
    out.push_back(
        pick_from(total > 0 ? residual : p, draw(key, target_draws_)));
    break;
  }
  proposals_.clear();
  q_.clear();
  return out;
}

}  // namespace nascent::generate
