// serve::Scheduler on a random-weight model: greedy output of concurrent
// requests (prompt chunks beside decodes, more requests than slots) equals
// what generate::TextGenerator gives each alone; cancellation frees the slot
// for the next request at once; a full queue and bad requests are refused;
// a cached prefix is reused; stop strings, max_tokens and logprobs; the
// threaded loop and its shutdown; events never split a UTF-8 character.
// With a draft model: greedy requests still get their solo tokens, seeded
// sampled ones generate::speculative_sample's, and the caches end idle.
#include <gtest/gtest.h>

#include <cmath>

#include "nascent/backends/cpu/backend.h"
#include "nascent/generate/generator.h"
#include "nascent/generate/speculative.h"
#include "nascent/generate/stream.h"
#include "nascent/models/llama/random_model.h"
#include "nascent/serve/scheduler.h"
#include "tests/io/test_files.h"
#include "tests/models/llama/test_model.h"

namespace nascent::test {
namespace {

using namespace std::chrono_literals;
using serve::Event;
using serve::FinishReason;
using tokenizer::TokenId;

cpu::Backend& backend() {
  static cpu::Backend b;
  return b;
}

struct Outcome {
  std::vector<TokenId> tokens;
  std::string text;
  FinishReason finish = FinishReason::error;
  Event last;
  int events = 0;
};

// Takes every event the request has now.
void drain(serve::Request& r, Outcome& o) {
  while (std::optional<Event> e = r.next(0ms)) {
    ++o.events;
    for (const auto& t : e->tokens) o.tokens.push_back(t.token.id);
    o.text += e->text;
    if (e->done) {
      o.finish = e->finish;
      o.last = *e;
    }
  }
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    llama::RandomModelConfig c;
    c.n_ctx = 128;
    c.seed = 3;
    llama::write_random_model(c, path());
    tok_ = tokenizer::Tokenizer::from_gguf_file(path());
  }
  std::string path() const { return dir_.file("m.gguf"); }
  std::shared_ptr<llama::Model> model(int32_t n_seq, int64_t n_ctx = 128) {
    return llama::load(path(), backend(), {.n_ctx = n_ctx, .n_seq = n_seq});
  }
  static serve::RequestOptions greedy(int32_t n) {
    serve::RequestOptions o;
    o.sampling.temperature = 0.0f;
    o.max_tokens = n;
    return o;
  }
  // What TextGenerator (the single-sequence path) makes of the prompt.
  generate::GenerateResult alone(const std::vector<TokenId>& prompt,
                                 const serve::RequestOptions& o) {
    generate::GenerateOptions g;
    g.sampling = o.sampling;
    g.max_tokens = o.max_tokens;
    g.stop = o.stop;
    generate::TextGenerator gen(model(1), *tok_, g);
    return gen.generate_tokens(prompt);
  }
  // Steps until every request has finished (bounded).
  static void run(serve::Scheduler& s, std::vector<serve::Request>& reqs,
                  std::vector<Outcome>& out) {
    out.assign(reqs.size(), Outcome{});
    for (int i = 0; i < 2000; ++i) {
      const bool busy = s.step();
      for (size_t k = 0; k < reqs.size(); ++k) drain(reqs[k], out[k]);
      if (!busy) return;
    }
    ADD_FAILURE() << "the scheduler did not finish in 2000 steps";
  }
  std::vector<TokenId> prompt(const std::string& text) const {
    return tok_->encode(text);
  }

  testing::TempDir dir_;
  std::optional<tokenizer::Tokenizer> tok_;
};

TEST_F(SchedulerTest, ConcurrentGreedyRequestsGetTheirSoloTokens) {
  const std::vector<std::string> texts = {
      "Once upon a time",
      "The quick brown fox jumps over the lazy dog",
      "a",
      "Hello, world! How are you today?",
      "1 2 3 4 5 6 7 8 9 10 11",
      "zzz",
      "In the beginning the universe was created"};
  std::vector<generate::GenerateResult> want;
  for (size_t i = 0; i < texts.size(); ++i) {
    want.push_back(alone(prompt(texts[i]), greedy(int32_t(6 + 3 * i))));
  }
  // 3 slots for 7 requests, 8 tokens a step: prompts are split into
  // chunks, run beside other requests' decodes, and slots are reused.
  serve::Scheduler s(model(3), *tok_, {.max_queue = 8, .n_batch = 8});
  std::vector<serve::Request> reqs;
  for (size_t i = 0; i < texts.size(); ++i) {
    reqs.push_back(s.submit(prompt(texts[i]), greedy(int32_t(6 + 3 * i))));
  }
  EXPECT_EQ(s.stats().queue_length, 7);
  std::vector<Outcome> out;
  run(s, reqs, out);
  for (size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE(texts[i]);
    EXPECT_EQ(out[i].tokens, want[i].tokens);
    EXPECT_EQ(out[i].text, want[i].text);
    EXPECT_EQ(out[i].last.completion_tokens, int64_t(want[i].tokens.size()));
    EXPECT_EQ(out[i].last.prompt_tokens, int64_t(want[i].prompt_tokens.size()));
    EXPECT_TRUE(out[i].finish == FinishReason::length ||
                out[i].finish == FinishReason::stop);
  }
  const serve::Stats st = s.stats();
  EXPECT_EQ(st.requests_total, 7);
  EXPECT_EQ(st.requests_done, 7);
  EXPECT_EQ(st.slots_active, 0);
  EXPECT_EQ(st.queue_length, 0);
  EXPECT_LE(st.last_batch_tokens, 8);
}

TEST_F(SchedulerTest, SampledRequestsFollowTheirSeedWhateverTheBatch) {
  serve::RequestOptions o;
  o.sampling.temperature = 0.9f;
  o.sampling.top_p = 0.9f;
  o.sampling.seed = 42;
  o.max_tokens = 10;
  o.ignore_eos = true;
  const generate::GenerateResult want = alone(prompt("Once upon"), o);
  serve::Scheduler s(model(2), *tok_);
  std::vector<serve::Request> reqs;
  reqs.push_back(s.submit(prompt("Something else entirely"), greedy(12)));
  reqs.push_back(s.submit(prompt("Once upon"), o));
  std::vector<Outcome> out;
  run(s, reqs, out);
  EXPECT_EQ(out[1].tokens, want.tokens);
}

TEST_F(SchedulerTest, DraftModelKeepsTheTargetsTokens) {
  llama::RandomModelConfig c;
  c.n_ctx = 128;
  c.seed = 3;
  c.type = QuantType::q8_0;  // Close to the target: most proposals kept.
  llama::write_random_model(c, dir_.file("q8.gguf"));
  c.type = QuantType::f32;
  c.seed = 77;  // Unrelated: most refused.
  llama::write_random_model(c, dir_.file("other.gguf"));
  const std::vector<std::string> texts = {
      "Once upon a time", "The quick brown fox jumps over the lazy dog", "a",
      "Hello, world! How are you today?", "1 2 3 4 5 6 7 8 9 10 11"};
  serve::RequestOptions sampled;
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.top_p = 0.9f;
  sampled.sampling.seed = 42;
  sampled.max_tokens = 20;
  sampled.ignore_eos = true;
  for (const char* d : {"q8.gguf", "other.gguf"}) {
    SCOPED_TRACE(d);
    auto draft = llama::load(dir_.file(d), backend(), {.n_ctx = 128});
    generate::SpeculativeOptions so;
    so.n_draft = 3;
    so.max_tokens = sampled.max_tokens;
    so.ignore_eos = true;
    so.sampling = sampled.sampling;
    const std::vector<TokenId> sampled_want =
        generate::speculative_sample(*model(1), *draft, *tok_,
                                     prompt("Once upon"), so)
            .tokens;
    // 2 slots for 6 requests, 8 tokens a step: prompts in chunks beside
    // verifications, slots (and both caches) reused.
    auto target = model(2);
    auto drafts =
        llama::load(dir_.file(d), backend(), {.n_ctx = 128, .n_seq = 2});
    serve::Scheduler s(
        target, *tok_,
        {.max_queue = 8, .n_batch = 8, .draft = drafts, .n_draft = 3});
    std::vector<serve::Request> reqs;
    std::vector<serve::RequestOptions> opts;
    for (size_t i = 0; i < texts.size(); ++i) {
      opts.push_back(greedy(int32_t(6 + 4 * i)));
      if (i == 1) opts.back().top_logprobs = 2;
      reqs.push_back(s.submit(prompt(texts[i]), opts.back()));
    }
    reqs.push_back(s.submit(prompt("Once upon"), sampled));
    std::vector<Outcome> out;
    run(s, reqs, out);
    for (size_t i = 0; i < texts.size(); ++i) {
      SCOPED_TRACE(texts[i]);
      const generate::GenerateResult want = alone(prompt(texts[i]), opts[i]);
      EXPECT_EQ(out[i].tokens, want.tokens);
      EXPECT_EQ(out[i].text, want.text);
      EXPECT_EQ(out[i].last.completion_tokens, int64_t(want.tokens.size()));
    }
    EXPECT_EQ(out.back().tokens, sampled_want);
    const serve::Stats st = s.stats();
    EXPECT_EQ(st.requests_done, 6);
    EXPECT_EQ(st.slots_active, 0);
    int64_t n_generated = 0;
    for (const Outcome& o : out) n_generated += int64_t(o.tokens.size());
    EXPECT_EQ(st.generated_tokens_total, n_generated);
    EXPECT_GT(st.drafted_tokens_total, 0);
    EXPECT_LE(st.accepted_tokens_total, st.drafted_tokens_total);
    if (std::string(d) == "q8.gguf") {
      // Several tokens a step: fewer steps than tokens.
      EXPECT_GT(st.accepted_tokens_total, st.drafted_tokens_total / 2);
      EXPECT_LT(st.steps_total, st.generated_tokens_total / 2);
    }
    // Idle: the draft's cache of a slot is a prefix of the target's.
    for (int32_t q = 0; q < 2; ++q) {
      EXPECT_LE(drafts->n_past(q), target->n_past(q));
      EXPECT_LE(target->n_past(q), 128);
    }
    // The seed gives the same tokens again, from a reused slot.
    reqs.clear();
    reqs.push_back(s.submit(prompt("Once upon"), sampled));
    run(s, reqs, out);
    EXPECT_EQ(out[0].tokens, sampled_want);
  }
  // A draft that does not fit the target.
  auto small = llama::load(dir_.file("q8.gguf"), backend(), {.n_ctx = 64});
  EXPECT_THROW(serve::Scheduler(model(1), *tok_, {.draft = small}), ValueError);
  auto one = llama::load(dir_.file("q8.gguf"), backend(), {.n_ctx = 128});
  EXPECT_THROW(serve::Scheduler(model(2), *tok_, {.draft = one}), ValueError);
}

TEST_F(SchedulerTest, CancellingFreesTheSlotAtOnce) {
  serve::Scheduler s(model(1), *tok_, {.max_queue = 4});
  const std::vector<TokenId> p = prompt("Hello there");
  serve::RequestOptions endless = greedy(-1);
  endless.ignore_eos = true;
  serve::Request a = s.submit(p, endless);
  serve::Request b = s.submit(prompt("Second request"), greedy(5));
  serve::Request c = s.submit(prompt("Third"), greedy(5));
  for (int i = 0; i < 4; ++i) s.step();
  EXPECT_EQ(s.stats().slots_active, 1);
  EXPECT_EQ(s.stats().queue_length, 2);
  c.cancel();  // Queued: leaves without running.
  a.cancel();  // Running: the next step gives its slot to b.
  s.step();
  Outcome oa, oc;
  drain(a, oa);
  drain(c, oc);
  EXPECT_EQ(oa.finish, FinishReason::cancelled);
  EXPECT_EQ(oa.tokens.size(), 4u);  // One per step before the cancel.
  EXPECT_EQ(oc.finish, FinishReason::cancelled);
  EXPECT_TRUE(oc.tokens.empty());
  EXPECT_EQ(s.stats().queue_length, 0);
  EXPECT_EQ(s.stats().slots_active, 1);  // b's.
  std::vector<serve::Request> rest;
  rest.push_back(std::move(b));
  std::vector<Outcome> out;
  run(s, rest, out);
  EXPECT_EQ(out[0].tokens, alone(prompt("Second request"), greedy(5)).tokens);
  // Dropping a handle cancels too.
  {
    serve::Request d = s.submit(p, endless);
    s.step();
    EXPECT_EQ(s.stats().slots_active, 1);
  }
  s.step();
  EXPECT_EQ(s.stats().slots_active, 0);
  EXPECT_EQ(s.stats().requests_done, 4);
  EXPECT_FALSE(s.step());
}

TEST_F(SchedulerTest, FullQueueAndBadRequestsAreRefused) {
  // One slot and one more waiting: a third request is refused until the
  // waiting one leaves.
  serve::Scheduler s(model(1, 16), *tok_, {.max_queue = 1});
  serve::Request a = s.submit(prompt("one"), greedy(2));
  serve::Request b = s.submit(prompt("two"), greedy(2));
  testing::expect_error<serve::QueueFull>(
      [&] { s.submit(prompt("three"), greedy(2)); },
      {"queue is full", "2 requests"});
  s.step();  // a takes the slot, b still waits.
  testing::expect_error<serve::QueueFull>(
      [&] { s.submit(prompt("three"), greedy(2)); }, {"1 requests"});
  b.cancel();
  s.step();
  serve::Request c = s.submit(prompt("three"), greedy(2));
  testing::expect_error<serve::PromptTooLong>(
      [&] { s.submit(std::vector<TokenId>(17, 5), greedy(2)); },
      {"17 tokens", "1 to 16"});
  testing::expect_error<serve::PromptTooLong>([&] { s.submit({}, greedy(2)); },
                                              {"0 tokens"});
  serve::RequestOptions bad = greedy(2);
  bad.sampling.top_p = 2.0f;
  testing::expect_error<ValueError>([&] { s.submit(prompt("x"), bad); },
                                    {"top_p"});
  bad = greedy(2);
  bad.stop = {""};
  testing::expect_error<ValueError>([&] { s.submit(prompt("x"), bad); },
                                    {"empty stop string"});
  bad = greedy(2);
  bad.top_logprobs = 21;
  testing::expect_error<ValueError>([&] { s.submit(prompt("x"), bad); },
                                    {"top_logprobs = 21"});
  testing::expect_error<ValueError>(
      [&] {
        s.submit({1, 100000}, greedy(2));
      },
      {"token id 100000"});
  EXPECT_EQ(s.stats().requests_rejected, 4);
  s.shutdown(0ms);
  testing::expect_error<serve::QueueFull>(
      [&] { s.submit(prompt("late"), greedy(2)); }, {"shutting down"});
  Outcome oa, ob, oc;
  drain(a, oa);
  drain(b, ob);
  drain(c, oc);
  EXPECT_EQ(ob.finish, FinishReason::cancelled);
  EXPECT_EQ(oc.finish, FinishReason::cancelled);
}

TEST_F(SchedulerTest, ReusesTheCachedPrefixOfASlot) {
  serve::Scheduler s(model(2), *tok_);
  const std::vector<TokenId> p1 = prompt("The cat sat on the mat and");
  std::vector<TokenId> p2 = p1;
  for (TokenId t : tok_->encode("then it slept", false)) p2.push_back(t);
  std::vector<serve::Request> reqs;
  reqs.push_back(s.submit(p1, greedy(3)));
  std::vector<Outcome> out;
  run(s, reqs, out);
  reqs.clear();
  reqs.push_back(s.submit(p2, greedy(8)));
  run(s, reqs, out);
  EXPECT_EQ(out[0].last.cached_tokens, int64_t(p1.size()));
  EXPECT_EQ(out[0].tokens, alone(p2, greedy(8)).tokens);
  EXPECT_EQ(s.stats().cached_tokens_total, int64_t(p1.size()));
}

TEST_F(SchedulerTest, StopStringsMaxTokensAndLogprobs) {
  const std::vector<TokenId> p = prompt("Tell me a story");
  const generate::GenerateResult free_run = alone(p, greedy(12));
  ASSERT_GE(free_run.text.size(), 4u);
  // A stop string taken from the middle of the free run's text.
  serve::RequestOptions o = greedy(12);
  o.stop = {free_run.text.substr(2, 2)};
  o.top_logprobs = 3;
  serve::Scheduler s(model(1), *tok_);
  std::vector<serve::Request> reqs;
  reqs.push_back(s.submit(p, o));
  std::vector<Outcome> out;
  run(s, reqs, out);
  EXPECT_EQ(out[0].finish, FinishReason::stop);
  EXPECT_EQ(out[0].text,
            free_run.text.substr(0, free_run.text.find(o.stop[0])));
  EXPECT_EQ(out[0].text, alone(p, o).text);
  // Logprobs: greedy picks the most likely token; the top list is sorted.
  reqs.clear();
  reqs.push_back(s.submit(p, o));
  bool saw = false;
  for (int i = 0; i < 100 && !saw; ++i) {
    s.step();
    while (std::optional<Event> e = reqs[0].next(0ms)) {
      for (const serve::SampledToken& t : e->tokens) {
        ASSERT_EQ(t.top.size(), 3u);
        EXPECT_EQ(t.top[0].id, t.token.id);
        EXPECT_FLOAT_EQ(t.top[0].logprob, t.token.logprob);
        EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
        EXPECT_GE(t.top[1].logprob, t.top[2].logprob);
        EXPECT_LE(t.token.logprob, 0.0f);
        double mass = 0;
        for (const auto& x : t.top) mass += std::exp(double(x.logprob));
        EXPECT_LE(mass, 1.0 + 1e-5);
        EXPECT_EQ(t.token.piece, tok_->token_to_piece(t.token.id, true));
        saw = true;
      }
      if (e->done) break;
    }
  }
  EXPECT_TRUE(saw);
  // max_tokens = 0 style lengths: exactly n tokens, finish "length".
  reqs.clear();
  serve::RequestOptions three = greedy(3);
  three.ignore_eos = true;
  reqs.push_back(s.submit(p, three));
  run(s, reqs, out);
  EXPECT_EQ(out[0].tokens.size(), 3u);
  EXPECT_EQ(out[0].finish, FinishReason::length);
}

TEST_F(SchedulerTest, ThreadedLoopStreamsAndShutsDown) {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  GTEST_SKIP() << "this WebAssembly build cannot start threads";
#endif
  // Contexts long enough that the endless request is still running when
  // the shutdown comes.
  serve::Scheduler s(model(2, 4096), *tok_);
  s.start();
  const std::vector<TokenId> p = prompt("Once upon a time");
  serve::Request r = s.submit(p, greedy(8));
  Outcome o;
  for (int i = 0; i < 200 && o.finish == FinishReason::error; ++i) {
    if (std::optional<Event> e = r.next(100ms)) {
      for (const auto& t : e->tokens) o.tokens.push_back(t.token.id);
      if (e->done) o.finish = e->finish;
    }
  }
  EXPECT_EQ(o.tokens, alone(p, greedy(8)).tokens);
  // An endless request is cancelled by the shutdown after its grace time.
  serve::RequestOptions endless = greedy(-1);
  endless.ignore_eos = true;
  serve::Request e = s.submit(p, endless);
  ASSERT_TRUE(e.next(5s).has_value());
  s.shutdown(50ms);
  Outcome oe;
  drain(e, oe);
  EXPECT_EQ(oe.finish, FinishReason::cancelled);
  EXPECT_EQ(s.stats().slots_active, 0);
}

// A vocabulary of byte tokens and multi-byte pieces: sampled byte tokens
// often end inside a character, which no event may split.
TEST(SchedulerUtf8, EventsNeverSplitACharacter) {
  testing::TempDir dir;
  ModelSpec spec;
  spec.extra = byte_vocab({"\xe2\x96\x81the", "\xc3\xa9t\xc3\xa9",
                           "\xe4\xb8\xad", "ab", "\xf0\x9f\x98\x80"});
  spec.n_vocab = 3 + 256 + 5;
  spec.n_ctx_train = 256;
  write_model(spec, dir.file("m.gguf"));
  auto model = llama::load(dir.file("m.gguf"), backend(), {.n_seq = 3});
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file().metadata());
  serve::Scheduler s(model, tok);
  std::vector<serve::Request> reqs;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    serve::RequestOptions o;
    o.sampling.temperature = 1.5f;
    o.sampling.top_k = 0;
    o.sampling.top_p = 1.0f;
    o.sampling.min_p = 0.0f;
    o.sampling.seed = seed;
    o.max_tokens = 60;
    o.ignore_eos = true;
    reqs.push_back(s.submit(tok.encode("\xc3\xa9t\xc3\xa9 \xe4\xb8\xad"), o));
  }
  int held_back = 0;
  std::vector<std::string> text(3);
  for (int i = 0; i < 500 && s.step(); ++i) {
    for (size_t k = 0; k < reqs.size(); ++k) {
      while (std::optional<Event> e = reqs[k].next(0ms)) {
        EXPECT_EQ(generate::sanitize_utf8(e->text), e->text);
        if (e->text.empty() && !e->done) ++held_back;
        text[k] += e->text;
      }
    }
  }
  EXPECT_GT(held_back, 0);  // Some characters did arrive over two tokens.
  for (const std::string& t : text) {
    EXPECT_EQ(generate::sanitize_utf8(t), t);
    EXPECT_FALSE(t.empty());
  }
}

}  // namespace
}  // namespace nascent::test
