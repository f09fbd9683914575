// Continuous batching for a LLaMA model: requests wait in a bounded queue,
// take one of the model's sequence slots (llama::LoadOptions::n_seq), and
// every step runs one llama::Model::forward_batch over all active
// sequences (the next token of those decoding, a chunk of the prompt of
// those starting). Requests join and leave between steps; a cancelled one
// frees its slot before the next step. A slot keeps its cache after a
// request ends, and a new request takes the idle slot whose cache shares
// the longest prefix with its prompt, evaluating only the rest.
//
//   serve::Scheduler sched(model, tokenizer, {.max_queue = 16});
//   serve::Request r = sched.submit(prompt_ids, {.max_tokens = 32});
//   sched.start();                           // or call step() yourself
//   while (auto e = r.next(std::chrono::seconds(5))) {
//     std::cout << e->text;                  // whole UTF-8 characters
//     if (e->done) break;
//   }
//
// Tokens are sampled with generate::Sampler (per request: temperature,
// top_k, top_p, min_p, penalties, seed) and shown through
// generate::StreamingDetokenizer and generate::StopStrings, as `nascent
// generate` does: greedy output of a request is the one it gets alone.
//
// With a draft model (SchedulerOptions::draft) decoding is speculative:
// each step the draft proposes up to n_draft tokens for every decoding
// sequence (its steps batched over the sequences), one target forward
// verifies them all, and generate::SpeculativeSampler keeps what the
// target's distribution allows (greedy: exactly the target's tokens), so a
// step may give a sequence several tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "nascent/core/error.h"
#include "nascent/generate/sampler.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::serve {

// submit() when the queue holds max_queue requests, or after shutdown.
class QueueFull : public Error {
 public:
  using Error::Error;
};
// submit() with a prompt that does not fit a slot's context.
class PromptTooLong : public ValueError {
 public:
  using ValueError::ValueError;
};

struct RequestOptions {
  generate::SamplingOptions sampling;
  // Tokens to generate at most; < 0: until the end or a full context.
  int32_t max_tokens = -1;
  std::vector<std::string> stop;  // Stop strings (not shown).
  // Tokens that end generation beside the vocabulary's end-of-generation
  // tokens (a chat template's end of turn).
  std::vector<tokenizer::TokenId> stop_tokens;
  bool ignore_eos = false;
  // < 0: no log-probabilities; k >= 0: each sampled token's log-probability
  // and the k most likely tokens' (at most 20).
  int32_t top_logprobs = -1;
  // > 0: the request ends (FinishReason::timeout) this long after submit.
  std::chrono::milliseconds timeout{0};
};

enum class FinishReason {
  stop,       // End-of-generation token or stop string.
  length,     // max_tokens, or the slot's context is full.
  cancelled,  // cancel(), the handle dropped, or shutdown.
  timeout,    // RequestOptions::timeout.
  error,      // The model failed (Event::error says how).
};
const char* to_string(FinishReason r);

struct TokenLogprob {
  tokenizer::TokenId id = 0;
  std::string piece;  // The token's bytes (may be part of a character).
  float logprob = 0.0f;
};

struct SampledToken {
  TokenLogprob token;
  std::vector<TokenLogprob> top;  // Most likely first (top_logprobs of them).
};

// What a request receives: usually one per generated token; the last has
// done set.
struct Event {
  std::string text;  // New text: whole UTF-8 characters, may be empty.
  std::vector<SampledToken> tokens;  // Generated since the last event.
  bool done = false;
  FinishReason finish = FinishReason::stop;
  std::string error;  // FinishReason::error.
  // Totals so far.
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // Prompt tokens reused from the slot's cache.
  int64_t completion_tokens = 0;
};

namespace detail {
struct RequestState;
}
class Scheduler;

// A submitted request. Thread-safe. Dropping it before its last event
// cancels the request.
class Request {
 public:
  Request() = default;
  Request(Request&&) noexcept = default;
  Request& operator=(Request&&) noexcept;
  ~Request();

  uint64_t id() const;
  // The next event, waiting at most `timeout`; nullopt on timeout or after
  // the last event.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  // Ends the request: its slot is free before the next step; a last event
  // (FinishReason::cancelled) follows unless it had finished. (A request
  // holds a slot only while the scheduler steps, so the flag needs no
  // wake-up.)
  void cancel();

 private:
  friend class Scheduler;
  std::shared_ptr<detail::RequestState> state_;
};

struct SchedulerOptions {
  // Requests waiting for a slot, at most (beyond those idle slots take).
  int32_t max_queue = 64;
  // Tokens per step at most: decode tokens first, then prompt chunks.
  int64_t n_batch = 512;
  // Speculative decoding: a draft model with the target's vocabulary and at
  // least its sequence slots and context (null: none), and the tokens it
  // proposes per sequence and step (>= 1).
  std::shared_ptr<llama::Model> draft = nullptr;
  int32_t n_draft = 4;
};

// Counters for /metrics (a snapshot).
struct Stats {
  int64_t requests_total = 0;       // Submitted.
  int64_t requests_done = 0;        // Finished, any reason.
  int64_t requests_rejected = 0;    // QueueFull or PromptTooLong.
  int64_t prompt_tokens_total = 0;  // Evaluated (not reused).
  int64_t cached_tokens_total = 0;  // Reused from slot caches.
  int64_t generated_tokens_total = 0;
  int64_t drafted_tokens_total = 0;   // Proposed by the draft model.
  int64_t accepted_tokens_total = 0;  // Of those, kept.
  int64_t steps_total = 0;
  int64_t queue_length = 0;
  int64_t slots_active = 0;
  int64_t slots_total = 0;
  int64_t last_batch_tokens = 0;     // Tokens of the last step.
  int64_t last_batch_sequences = 0;  // Sequences of the last step.
  double busy_seconds = 0.0;         // Time spent in steps.
  // Generated tokens per second over the last few seconds of steps.
  double recent_tokens_per_s = 0.0;
};

class Scheduler {
 public:
  // One slot per model sequence (model->n_seq()). ValueError for bad
  // options, a tokenizer larger than the model's vocabulary, or a draft
  // whose vocabulary, slots or context do not match.
  Scheduler(std::shared_ptr<llama::Model> model, tokenizer::Tokenizer tokenizer,
            SchedulerOptions options = {});
  ~Scheduler();  // shutdown(0).
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. QueueFull when max_queue requests wait or after
  // shutdown; PromptTooLong for an empty prompt or one longer than a
  // slot's context; ValueError for bad options (sampling, empty stop
  // string, top_logprobs above 20, ids outside the vocabulary).
  Request submit(std::vector<tokenizer::TokenId> prompt,
                 RequestOptions options = {});

  // One batched forward over the active sequences (admitting queued
  // requests and dropping cancelled ones first). False when there was
  // nothing to do. Call from one thread only, and not while start()'s
  // thread runs.
  bool step();
  // Steps on a thread of its own until shutdown().
  void start();
  // Stops taking requests; lets active requests run for at most `grace`,
  // then cancels whatever remains (queued requests at once) and joins the
  // thread.
  void shutdown(std::chrono::milliseconds grace);

  Stats stats() const;
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  llama::Model& model() { return *model_; }
  int32_t n_slots() const { return int32_t(slots_.size()); }

 private:
  struct Slot;
  void admit();
  // Sends the last event (totals filled in) and frees the slot.
  void end(Slot& slot, Event e);
  void finish(Slot& slot, FinishReason reason, const std::string& error = {});
  // Forgets the slot's caches after a failed forward and ends its request.
  void fail(Slot& slot, const std::string& error);
  // Streams a chosen token (`logits`: the target's row it came from); true
  // when the request ended with it.
  bool emit(Slot& slot, tokenizer::TokenId id, std::span<const float> logits);
  // The draft's proposals for each decoding slot (Slot::proposals).
  void propose(const std::vector<Slot*>& decoding);
  void loop();

  std::shared_ptr<llama::Model> model_;
  tokenizer::Tokenizer tokenizer_;
  SchedulerOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;  // Touched by the stepper only.

  mutable std::mutex mutex_;  // Guards what follows.
  std::condition_variable wake_;
  std::deque<std::shared_ptr<detail::RequestState>> queue_;
  bool closed_ = false;    // No more submits.
  bool stopping_ = false;  // The thread should end.
  uint64_t next_id_ = 1;
  Stats stats_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>>
      recent_;  // (step end, tokens generated) of the last seconds.
  std::thread thread_;
};

}  // namespace nascent::serve
