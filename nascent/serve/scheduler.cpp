// The continuous-batching loop: admit queued requests into idle slots
// (longest cached prefix first), drop cancelled and timed-out ones, run one
// forward_batch over every active slot's next tokens, sample for those whose
// prompt is done, stream and finish. With a draft model the decode tokens
// come with the draft's proposals, and the draft follows each slot's
// prompt chunks and kept tokens in its own cache.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "nascent/generate/speculative.h"
#include "nascent/generate/stream.h"
#include "nascent/serve/request_state.h"

namespace nascent::serve {

using Clock = std::chrono::steady_clock;
using tokenizer::TokenId;

struct Scheduler::Slot {
  int32_t seq = 0;
  std::vector<TokenId> cached;  // The tokens of the slot's KV cache.
  uint64_t last_used = 0;       // Step of the last request's end (LRU).
  // The request it serves (null: idle) and that request's progress.
  std::shared_ptr<detail::RequestState> req;
  std::optional<generate::Sampler> sampler;
  std::optional<generate::SpeculativeSampler> spec;  // With a draft instead.
  std::vector<TokenId> draft_cached;  // The tokens of the draft's cache.
  std::vector<TokenId> proposals;     // The draft's, this step.
  std::vector<TokenId> verify;        // The pending token, then proposals.
  std::optional<generate::StreamingDetokenizer> detok;
  std::optional<generate::StopStrings> stops;
  int32_t pending = -1;  // Sampled, not yet evaluated (-1: in the prompt).
  int64_t n_cached_prompt = 0;
  int64_t n_generated = 0;
};

namespace {

// Log-probabilities from raw logits: log_softmax in double.
void add_logprobs(std::span<const float> row, TokenId id, int32_t k,
                  const tokenizer::Tokenizer& tok, SampledToken& out) {
  const float max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (const float x : row) sum += std::exp(double(x) - max);
  const double log_z = double(max) + std::log(sum);
  auto lp = [&](TokenId t) { return float(double(row[size_t(t)]) - log_z); };
  out.token.logprob = lp(id);
  if (k <= 0) return;
  std::vector<TokenId> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t n = std::min(size_t(k), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + int64_t(n), ids.end(),
                    [&](TokenId a, TokenId b) {
                      return row[size_t(a)] > row[size_t(b)] ||
                             (row[size_t(a)] == row[size_t(b)] && a < b);
                    });
  for (size_t i = 0; i < n; ++i) {
    out.top.push_back({ids[i], tok.token_to_piece(ids[i], true), lp(ids[i])});
  }
}

// How many tokens `a` and `b` share from their start.
size_t shared_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  return size_t(
      std::mismatch(a.begin(), a.begin() + int64_t(n), b.begin()).first -
      a.begin());
}

// The part of a cache a prompt can reuse: what they share, short of the
// prompt's last token (a forward needs one token to give the next's logits).
size_t reusable_prefix(std::span<const TokenId> cached,
                       std::span<const TokenId> prompt) {
  return shared_prefix(cached,
                       prompt.first(prompt.empty() ? 0 : prompt.size() - 1));
}

}  // namespace

Scheduler::Scheduler(std::shared_ptr<llama::Model> model,
                     tokenizer::Tokenizer tokenizer, SchedulerOptions options)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      options_(options) {
  if (model_ == nullptr)
    throw ValueError("serve::Scheduler: the model is null");
  if (int64_t(tokenizer_.size()) > model_->config().n_vocab) {
    throw ValueError(fmt::format(
        "serve::Scheduler: the tokenizer has {} tokens, the model only {}",
        tokenizer_.size(), model_->config().n_vocab));
  }
  if (options_.max_queue < 0 || options_.n_batch < 1) {
    throw ValueError(fmt::format(
        "serve::Scheduler: max_queue = {} must be >= 0 and n_batch = {} >= 1",
        options_.max_queue, options_.n_batch));
  }
  const std::shared_ptr<llama::Model>& d = options_.draft;
  if (d != nullptr && (d->config().n_vocab != model_->config().n_vocab ||
                       d->n_seq() < model_->n_seq() ||
                       d->n_ctx() < model_->n_ctx() || options_.n_draft < 1)) {
    throw ValueError(fmt::format(
        "serve::Scheduler: the draft model ({} tokens, {} slots of {} "
        "positions, n_draft = {}) needs the target's vocabulary ({}), at "
        "least its {} slots of {} and n_draft >= 1",
        d->config().n_vocab, d->n_seq(), d->n_ctx(), options_.n_draft,
        model_->config().n_vocab, model_->n_seq(), model_->n_ctx()));
  }
  for (int32_t s = 0; s < model_->n_seq(); ++s) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->seq = s;
  }
  stats_.slots_total = int64_t(slots_.size());
}

Scheduler::~Scheduler() {
  shutdown(std::chrono::milliseconds(0));
}

Request Scheduler::submit(std::vector<TokenId> prompt, RequestOptions options) {
  const int64_t n_ctx = model_->n_ctx();
  auto reject = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.requests_rejected;
  };
  if (prompt.empty() || int64_t(prompt.size()) > n_ctx) {
    reject();
    throw PromptTooLong(
        fmt::format("the prompt has {} tokens; a slot's context holds 1 to {}",
                    prompt.size(), n_ctx));
  }
  for (const TokenId id : prompt) {
    if (id < 0 || size_t(id) >= tokenizer_.size()) {
      throw ValueError(
          fmt::format("token id {} is outside the vocabulary [0, {})", id,
                      tokenizer_.size()));
    }
  }
  if (options.top_logprobs > 20) {
    throw ValueError(
        fmt::format("top_logprobs = {} is above 20", options.top_logprobs));
  }
  generate::Sampler check_sampling(options.sampling);  // ValueError.
  generate::StopStrings check_stops(options.stop);
  auto state = std::make_shared<detail::RequestState>();
  state->prompt = std::move(prompt);
  state->options = std::move(options);
  if (state->options.timeout.count() > 0) {
    state->deadline = Clock::now() + state->options.timeout;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      ++stats_.requests_rejected;
      throw QueueFull("the server is shutting down");
    }
    // Idle slots take queued requests at the next step: they count as room.
    const int64_t idle = stats_.slots_total - stats_.slots_active;
    if (int64_t(queue_.size()) >= options_.max_queue + idle) {
      ++stats_.requests_rejected;
      throw QueueFull(
          fmt::format("the queue is full ({} requests wait for {} slots)",
                      queue_.size(), slots_.size()));
    }
    state->id = next_id_++;
    ++stats_.requests_total;
    queue_.push_back(state);
    stats_.queue_length = int64_t(queue_.size());
  }
  wake_.notify_all();
  Request r;
  r.state_ = std::move(state);
  return r;
}

void Scheduler::admit() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Cancelled requests leave the queue at once.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->cancelled.load() || Clock::now() >= (*it)->deadline) {
      Event e;
      e.done = true;
      e.finish = (*it)->cancelled.load() ? FinishReason::cancelled
                                         : FinishReason::timeout;
      e.prompt_tokens = int64_t((*it)->prompt.size());
      (*it)->push(std::move(e));
      ++stats_.requests_done;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  while (!queue_.empty()) {
    // The idle slot sharing the longest prefix with the prompt, then the
    // least recently used.
    const std::vector<TokenId>& prompt = queue_.front()->prompt;
    Slot* best = nullptr;
    size_t best_common = 0;
    for (auto& s : slots_) {
      if (s->req) continue;
      const size_t common = reusable_prefix(s->cached, prompt);
      if (best == nullptr || common > best_common ||
          (common == best_common && s->last_used < best->last_used)) {
        best = s.get();
        best_common = common;
      }
    }
    if (best == nullptr) break;
    Slot& slot = *best;
    slot.req = std::move(queue_.front());
    queue_.pop_front();
    model_->truncate(int64_t(best_common), slot.seq);
    slot.cached.resize(best_common);
    const RequestOptions& o = slot.req->options;
    if (options_.draft) {
      // The draft keeps what its cache shares with the prompt.
      const size_t common =
          reusable_prefix(slot.draft_cached, slot.req->prompt);
      options_.draft->truncate(int64_t(common), slot.seq);
      slot.draft_cached.resize(common);
      slot.spec.emplace(o.sampling, tokenizer_.size());
      for (const TokenId id : slot.req->prompt) slot.spec->accept(id);
    } else {
      slot.sampler.emplace(o.sampling);
      for (const TokenId id : slot.req->prompt) slot.sampler->accept(id);
    }
    slot.detok.emplace(tokenizer_);
    slot.stops.emplace(o.stop);
    slot.pending = -1;
    slot.n_cached_prompt = int64_t(best_common);
    slot.n_generated = 0;
    stats_.cached_tokens_total += int64_t(best_common);
    ++stats_.slots_active;
  }
  stats_.queue_length = int64_t(queue_.size());
}

void Scheduler::end(Slot& slot, Event e) {
  e.done = true;
  e.prompt_tokens = int64_t(slot.req->prompt.size());
  e.cached_tokens = slot.n_cached_prompt;
  e.completion_tokens = slot.n_generated;
  slot.req->push(std::move(e));
  slot.req.reset();
  slot.pending = -1;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.requests_done;
  --stats_.slots_active;
  slot.last_used = uint64_t(stats_.steps_total);
}

void Scheduler::finish(Slot& slot, FinishReason reason,
                       const std::string& error) {
  Event e;
  e.finish = reason;
  e.error = error;
  end(slot, std::move(e));
}

void Scheduler::fail(Slot& slot, const std::string& error) {
  model_->truncate(0, slot.seq);
  slot.cached.clear();
  if (options_.draft) {
    options_.draft->truncate(0, slot.seq);
    slot.draft_cached.clear();
  }
  finish(slot, FinishReason::error, error);
}

bool Scheduler::emit(Slot& slot, TokenId id, std::span<const float> logits) {
  const RequestOptions& o = slot.req->options;
  const std::span<const float> row = logits.first(tokenizer_.size());
  if (slot.spec) {
    slot.spec->accept(id);
  } else {
    slot.sampler->accept(id);
  }
  ++slot.n_generated;
  Event e;
  if (o.top_logprobs >= 0) {
    SampledToken t;
    t.token = {id, tokenizer_.token_to_piece(id, true), 0.0f};
    add_logprobs(row, id, o.top_logprobs, tokenizer_, t);
    e.tokens.push_back(std::move(t));
  } else {
    e.tokens.push_back({{id, {}, 0.0f}, {}});
  }
  const bool end_token =
      !o.ignore_eos && (tokenizer_.is_eog(id) ||
                        std::find(o.stop_tokens.begin(), o.stop_tokens.end(),
                                  id) != o.stop_tokens.end());
  std::optional<FinishReason> done;
  if (end_token) {
    done = FinishReason::stop;  // The end token's text is not shown.
  } else {
    e.text = slot.stops->push(slot.detok->push(id));
    if (slot.stops->stopped()) {
      done = FinishReason::stop;
    } else if (o.max_tokens >= 0 && slot.n_generated >= o.max_tokens) {
      done = FinishReason::length;
    } else if (int64_t(slot.cached.size()) >= model_->n_ctx()) {
      done = FinishReason::length;  // No room to evaluate the token.
    }
  }
  if (!done) {
    e.prompt_tokens = int64_t(slot.req->prompt.size());
    e.cached_tokens = slot.n_cached_prompt;
    e.completion_tokens = slot.n_generated;
    slot.req->push(std::move(e));
    slot.pending = id;
    return false;
  }
  // The last event carries this token and what the detokenizer and the
  // stop strings still hold.
  if (!slot.stops->stopped()) {
    e.text += slot.stops->push(slot.detok->flush());
    if (!slot.stops->stopped()) e.text += slot.stops->flush();
  }
  e.finish = *done;
  end(slot, std::move(e));
  return true;
}

void Scheduler::propose(const std::vector<Slot*>& decoding) {
  llama::Model& draft = *options_.draft;
  // Proposals per slot: no more than the context holds after the pending
  // token, nor than the request may still emit beside the target's own,
  // and the decode tokens with their proposals within n_batch.
  std::vector<int64_t> k(decoding.size());
  int64_t k_max = 0;
  const int64_t k_batch =
      options_.n_batch / std::max<int64_t>(1, int64_t(decoding.size())) - 1;
  for (size_t i = 0; i < decoding.size(); ++i) {
    Slot& s = *decoding[i];
    s.proposals.clear();
    const RequestOptions& o = s.req->options;
    k[i] = std::min<int64_t>({options_.n_draft, k_batch,
                              model_->n_ctx() - int64_t(s.cached.size()) - 1});
    if (o.max_tokens >= 0) {
      k[i] = std::min<int64_t>(k[i], o.max_tokens - s.n_generated - 1);
    }
    k[i] = std::max<int64_t>(k[i], 0);
    k_max = std::max(k_max, k[i]);
  }
  std::vector<std::vector<TokenId>> fed(decoding.size());
  for (int64_t j = 0; j < k_max; ++j) {
    std::vector<llama::SeqChunk> chunks;
    std::vector<size_t> owners;
    for (size_t i = 0; i < decoding.size(); ++i) {
      Slot& s = *decoding[i];
      if (!s.req || k[i] <= j) continue;
      if (j == 0) {
        // What the draft lacks of the sequence, the pending token included.
        fed[i].assign(s.cached.begin() + int64_t(s.draft_cached.size()),
                      s.cached.end());
        fed[i].push_back(s.pending);
      } else {
        fed[i] = {s.proposals.back()};
      }
      chunks.push_back({.seq = s.seq,
                        .n_past = int64_t(s.draft_cached.size()),
                        .tokens = fed[i],
                        .n_logits = 1});
      owners.push_back(i);
    }
    if (chunks.empty()) return;
    std::vector<float> rows;
    try {
      rows = draft.forward_batch(chunks).to_vector<float>();
    } catch (const std::exception& ex) {
      for (const size_t i : owners) fail(*decoding[i], ex.what());
      continue;
    }
    const size_t n_vocab = size_t(draft.config().n_vocab);
    for (size_t r = 0; r < owners.size(); ++r) {
      Slot& s = *decoding[owners[r]];
      s.draft_cached.insert(s.draft_cached.end(), fed[owners[r]].begin(),
                            fed[owners[r]].end());
      s.proposals.push_back(s.spec->propose(
          std::span<const float>(rows).subspan(r * n_vocab, n_vocab)));
    }
  }
}

bool Scheduler::step() {
  const auto now = Clock::now();
  {
    // A shutdown past its grace time cancels what runs.
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      for (auto& s : slots_) {
        if (s->req) s->req->cancelled.store(true);
      }
    }
  }
  for (auto& s : slots_) {
    if (!s->req) continue;
    if (s->req->cancelled.load()) {
      finish(*s, FinishReason::cancelled);
    } else if (now >= s->req->deadline) {
      finish(*s, FinishReason::timeout);
    }
  }
  // Then the freed slots take queued requests.
  admit();
  const auto t0 = Clock::now();
  std::vector<Slot*> decoding;
  for (auto& s : slots_) {
    if (s->req && s->pending >= 0) decoding.push_back(s.get());
  }
  if (options_.draft) propose(decoding);
  // Decode tokens first (each with its proposals), then prompt chunks in
  // what is left.
  std::vector<llama::SeqChunk> chunks;
  std::vector<Slot*> owners;
  int64_t budget = options_.n_batch;
  int64_t n_prompt = 0;
  for (Slot* s : decoding) {
    if (!s->req) continue;  // The draft failed.
    s->verify = {s->pending};
    s->verify.insert(s->verify.end(), s->proposals.begin(), s->proposals.end());
    chunks.push_back({.seq = s->seq,
                      .n_past = int64_t(s->cached.size()),
                      .tokens = s->verify,
                      .n_logits = int64_t(s->verify.size())});
    owners.push_back(s);
    budget -= int64_t(s->verify.size());
  }
  std::vector<llama::SeqChunk> draft_chunks;
  std::vector<Slot*> draft_owners;
  for (auto& s : slots_) {
    if (!s->req || s->pending >= 0 || budget <= 0) continue;
    const std::vector<TokenId>& prompt = s->req->prompt;
    const size_t done = s->cached.size();
    const int64_t m = std::min<int64_t>(budget, int64_t(prompt.size() - done));
    const bool last = done + size_t(m) == prompt.size();
    chunks.push_back({.seq = s->seq,
                      .n_past = int64_t(done),
                      .tokens = {prompt.data() + done, size_t(m)},
                      .n_logits = last ? 1 : 0});
    owners.push_back(s.get());
    budget -= m;
    n_prompt += m;
    // The draft reads the prompt as the target does.
    const size_t d = s->draft_cached.size();
    if (options_.draft && d < done + size_t(m)) {
      draft_chunks.push_back(
          {.seq = s->seq,
           .n_past = int64_t(d),
           .tokens = {prompt.data() + d, done + size_t(m) - d},
           .n_logits = 0});
      draft_owners.push_back(s.get());
    }
  }
  if (chunks.empty()) return !decoding.empty();
  Tensor logits;
  try {
    if (!draft_chunks.empty()) options_.draft->forward_batch(draft_chunks);
    logits = model_->forward_batch(chunks);
  } catch (const std::exception& ex) {
    // The batch's caches are unknown now: forget them.
    for (Slot* s : owners) fail(*s, ex.what());
    return true;
  }
  for (size_t i = 0; i < draft_chunks.size(); ++i) {
    Slot& s = *draft_owners[i];
    s.draft_cached.insert(s.draft_cached.end(), draft_chunks[i].tokens.begin(),
                          draft_chunks[i].tokens.end());
  }
  int64_t n_tokens = 0, row = 0, generated = 0, drafted = 0, accepted = 0;
  std::vector<float> host;
  if (logits.defined()) host = logits.to_vector<float>();
  const size_t n_vocab = size_t(model_->config().n_vocab);
  for (size_t i = 0; i < chunks.size(); ++i) {
    Slot& s = *owners[i];
    const std::span<const int32_t> tokens = chunks[i].tokens;
    n_tokens += int64_t(tokens.size());
    const size_t n_rows = size_t(chunks[i].n_logits);
    const std::span<const float> rows = std::span<const float>(host).subspan(
        size_t(row) * n_vocab, n_rows * n_vocab);
    row += int64_t(n_rows);
    if (!s.spec) {
      s.cached.insert(s.cached.end(), tokens.begin(), tokens.end());
      if (n_rows == 0) continue;
      emit(s, s.sampler->sample(rows.first(tokenizer_.size())), rows);
      ++generated;
      continue;
    }
    // The prompt chunk or the pending token is in the cache now; of the
    // proposals, those kept.
    const size_t n_proposed = s.proposals.size();
    s.cached.insert(s.cached.end(), tokens.begin(),
                    tokens.end() - int64_t(n_proposed));
    if (n_rows > 0) {
      const std::vector<TokenId> out = s.spec->verify(rows, n_vocab);
      drafted += int64_t(n_proposed);
      accepted += int64_t(out.size()) - 1;
      for (size_t j = 0; j < out.size(); ++j) {
        ++generated;
        if (emit(s, out[j], rows.subspan(j * n_vocab, n_vocab))) break;
        if (j + 1 < out.size()) s.cached.push_back(out[j]);
      }
    }
    s.proposals.clear();
    // Both caches back to the tokens kept.
    model_->truncate(int64_t(s.cached.size()), s.seq);
    const size_t d = shared_prefix(s.draft_cached, s.cached);
    s.draft_cached.resize(d);
    options_.draft->truncate(int64_t(d), s.seq);
  }
  const auto t1 = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.steps_total;
  stats_.last_batch_tokens = n_tokens;
  stats_.last_batch_sequences = int64_t(chunks.size());
  stats_.generated_tokens_total += generated;
  stats_.drafted_tokens_total += drafted;
  stats_.accepted_tokens_total += accepted;
  stats_.prompt_tokens_total += n_prompt;
  stats_.busy_seconds += std::chrono::duration<double>(t1 - t0).count();
  recent_.emplace_back(t1, generated);
  while (!recent_.empty() &&
         t1 - recent_.front().first > std::chrono::seconds(10)) {
    recent_.pop_front();
  }
  return true;
}

void Scheduler::loop() {
  while (true) {
    const bool active = std::any_of(slots_.begin(), slots_.end(),
                                    [](const auto& s) { return bool(s->req); });
    if (!active) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_ && queue_.empty()) return;
    }
    step();
  }
}

void Scheduler::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable() || closed_) return;
  thread_ = std::thread([this] { loop(); });
}

void Scheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    for (auto& q : queue_) q->cancelled.store(true);
  }
  const auto deadline = Clock::now() + grace;
  if (thread_.joinable()) {
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stats_.slots_active == 0 && queue_.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // No stepper runs now: end whatever is left.
  admit();
  for (auto& s : slots_) {
    if (s->req) finish(*s, FinishReason::cancelled);
  }
}

Stats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  if (recent_.size() >= 2) {
    int64_t n = 0;
    for (size_t i = 1; i < recent_.size(); ++i) n += recent_[i].second;
    const double dt = std::chrono::duration<double>(recent_.back().first -
                                                    recent_.front().first)
                          .count();
    if (dt > 0) s.recent_tokens_per_s = double(n) / dt;
  }
  return s;
}

}  // namespace nascent::serve
