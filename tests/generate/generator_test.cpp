// TextGenerator on random models with a byte-level vocabulary: greedy is
// deterministic and follows the model's argmax, max tokens and stop strings
// end generation, streamed pieces are always whole UTF-8 characters, and a
// prompt extending the cached one evaluates only the new tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "nascent/backends/cpu/backend.h"
#include "nascent/generate/generator.h"
#include "nascent/generate/stream.h"
#include "tests/io/test_files.h"
#include "tests/models/llama/test_model.h"

namespace nascent::test {
namespace {

cpu::Backend& backend() {
  static cpu::Backend b;
  return b;
}

bool valid_utf8(std::string_view s) {
  return generate::sanitize_utf8(s) == s;
}

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelSpec s;
    // Pieces with multi-byte characters, so that sampled byte tokens often
    // leave characters unfinished.
    s.extra = byte_vocab({"\xe2\x96\x81the", "\xc3\xa9t\xc3\xa9",
                          "\xe4\xb8\xad", "ab", "\xf0\x9f\x98\x80"});
    s.n_vocab = 3 + 256 + 5;
    s.n_ctx_train = 64;
    write_model(s, dir_.file("m.gguf"));
    model_ = llama::load(dir_.file("m.gguf"), backend());
    tokenizer_ = tokenizer::Tokenizer::from_gguf(model_->file().metadata());
  }
  generate::TextGenerator make(generate::GenerateOptions o) {
    return generate::TextGenerator(model_, *tokenizer_, o);
  }
  static generate::GenerateOptions greedy(int32_t n) {
    generate::GenerateOptions o;
    o.sampling.temperature = 0.0f;
    o.max_tokens = n;
    o.ignore_eos = true;
    return o;
  }

  testing::TempDir dir_;
  std::shared_ptr<llama::Model> model_;
  std::optional<tokenizer::Tokenizer> tokenizer_;
};

TEST_F(GeneratorTest, GreedyIsDeterministicAndFollowsArgmax) {
  generate::TextGenerator gen = make(greedy(12));
  const generate::GenerateResult a = gen.generate("the \xc3\xa9t\xc3\xa9");
  EXPECT_EQ(a.tokens.size(), 12u);
  EXPECT_EQ(a.stop_reason, generate::StopReason::max_tokens);
  EXPECT_EQ(a.prompt_tokens, tokenizer_->encode("the \xc3\xa9t\xc3\xa9"));
  EXPECT_EQ(a.n_generation_eval, 11);
  gen.reset();
  const generate::GenerateResult b = gen.generate("the \xc3\xa9t\xc3\xa9");
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.text, b.text);
  // Each token is the argmax of the model's logits after the sequence so
  // far, computed from scratch.
  std::vector<int32_t> seq = a.prompt_tokens;
  for (const tokenizer::TokenId id : a.tokens) {
    model_->reset();
    const std::vector<float> l = model_->forward(seq, 0).to_vector<float>();
    EXPECT_EQ(id, std::max_element(l.begin(), l.end()) - l.begin());
    seq.push_back(id);
  }
  EXPECT_EQ(a.text, generate::sanitize_utf8(tokenizer_->decode(a.tokens)));
}

TEST_F(GeneratorTest, StopStringEndsGeneration) {
  // Sampled text, then a stop string taken from its middle.
  generate::GenerateOptions o;
  o.sampling.seed = 5;
  o.sampling.temperature = 1.5f;
  o.sampling.top_k = 0;
  o.sampling.min_p = 0.0f;
  o.sampling.top_p = 1.0f;
  o.ignore_eos = true;
  o.max_tokens = 40;
  generate::TextGenerator gen = make(o);
  const generate::GenerateResult full = gen.generate("ab");
  ASSERT_GE(full.text.size(), 6u);
  // A whole character near the middle.
  size_t cut = full.text.size() / 2;
  while (cut > 0 && (uint8_t(full.text[cut]) & 0xC0) == 0x80) --cut;
  const std::string stop = full.text.substr(cut, 1);
  const size_t first = full.text.find(stop);
  o.stop = {stop};
  gen.set_options(o);
  gen.reset();
  const generate::GenerateResult r = gen.generate("ab");
  EXPECT_EQ(r.stop_reason, generate::StopReason::stop_string);
  EXPECT_EQ(r.text, full.text.substr(0, first));
  EXPECT_LT(r.tokens.size(), full.tokens.size());
}

TEST_F(GeneratorTest, StreamsWholeCharacters) {
  generate::GenerateOptions o;
  o.sampling.temperature = 2.0f;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0f;
  o.sampling.min_p = 0.0f;
  o.ignore_eos = true;
  o.max_tokens = 48;
  int multibyte = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    o.sampling.seed = seed;
    generate::TextGenerator gen = make(o);
    std::string joined;
    int calls = 0;
    const generate::GenerateResult r =
        gen.generate("\xe4\xb8\xad", [&](std::string_view t) {
          EXPECT_TRUE(valid_utf8(t)) << "seed " << seed;
          EXPECT_FALSE(t.empty());
          joined += t;
          ++calls;
          return true;
        });
    EXPECT_EQ(joined, r.text);
    EXPECT_TRUE(valid_utf8(r.text));
    EXPECT_GT(calls, 0);
    for (const tokenizer::TokenId id : r.tokens) {
      const std::string piece = tokenizer_->token_to_piece(id);
      multibyte += piece.size() == 1 && uint8_t(piece[0]) >= 0x80;
    }
  }
  // The test means something only if lone high bytes were sampled.
  EXPECT_GT(multibyte, 10);
}

TEST_F(GeneratorTest, CallbackStopsAndCachedPrefixIsReused) {
  generate::TextGenerator gen = make(greedy(30));
  int calls = 0;
  const generate::GenerateResult r =
      gen.generate("the", [&](std::string_view) { return ++calls < 3; });
  EXPECT_EQ(r.stop_reason, generate::StopReason::callback);
  EXPECT_EQ(calls, 3);

  // A prompt extending what the cache holds evaluates only the new tokens
  // and generates what a fresh generator does.
  std::vector<tokenizer::TokenId> prompt = gen.cached_tokens();
  const size_t cached = prompt.size();
  prompt.push_back(tokenizer_->find_token("ab"));
  const generate::GenerateResult more = gen.generate_tokens(prompt);
  EXPECT_EQ(more.n_prompt_eval, 1);
  EXPECT_EQ(gen.cached_tokens().size(), cached + 1 + 29);
  generate::TextGenerator fresh = make(greedy(30));
  const generate::GenerateResult want = fresh.generate_tokens(prompt);
  EXPECT_EQ(want.n_prompt_eval, int64_t(prompt.size()));
  EXPECT_EQ(more.tokens, want.tokens);
}

// GenerateOptions::stop_tokens (a chat template's end of turn) end a reply
// as EOS does: the token is the last one kept and its text is not shown.
TEST_F(GeneratorTest, StopTokensEndGenerationLikeEos) {
  generate::GenerateOptions o = greedy(12);
  o.ignore_eos = false;
  const generate::GenerateResult free_run = make(o).generate("the");
  ASSERT_EQ(free_run.tokens.size(), 12u);  // No EOS in the greedy run.
  const tokenizer::TokenId stop = free_run.tokens[5];
  const size_t first =
      size_t(std::find(free_run.tokens.begin(), free_run.tokens.end(), stop) -
             free_run.tokens.begin());
  o.stop_tokens = {stop};
  const generate::GenerateResult r = make(o).generate("the");
  EXPECT_EQ(r.stop_reason, generate::StopReason::eog);
  EXPECT_EQ(r.tokens,
            std::vector<tokenizer::TokenId>(
                free_run.tokens.begin(), free_run.tokens.begin() + first + 1));
  // ignore_eos keeps going past them too.
  o.ignore_eos = true;
  EXPECT_EQ(make(o).generate("the").tokens, free_run.tokens);
}

TEST_F(GeneratorTest, ContextFullAndBadPrompts) {
  generate::TextGenerator gen = make(greedy(-1));
  const std::vector<tokenizer::TokenId> prompt(60, 5);
  const generate::GenerateResult r = gen.generate_tokens(prompt);
  EXPECT_EQ(r.stop_reason, generate::StopReason::context_full);
  EXPECT_EQ(r.tokens.size(), 5u);  // 60 + 4 evaluated fill n_ctx = 64.
  testing::expect_error<ValueError>([&] { gen.generate_tokens({}); },
                                    {"0 tokens", "n_ctx = 64"});
  const std::vector<tokenizer::TokenId> too_long(65, 5);
  testing::expect_error<ValueError>([&] { gen.generate_tokens(too_long); },
                                    {"65 tokens"});
  generate::GenerateOptions o = greedy(4);
  o.stop = {""};
  testing::expect_error<ValueError>([&] { make(o); }, {"stop"});
}

TEST(TextGenerator, NeverSamplesPaddingRows) {
  // 40 output rows more than the vocabulary has tokens: at temperature 3
  // with no truncation, 60 draws would hit them about 8 times if they could
  // be sampled.
  testing::TempDir dir;
  ModelSpec s;
  s.extra = byte_vocab({});
  s.n_vocab = 259 + 40;
  write_model(s, dir.file("m.gguf"));
  cpu::Backend& b = backend();
  auto model = llama::load(dir.file("m.gguf"), b);
  const tokenizer::Tokenizer tok =
      tokenizer::Tokenizer::from_gguf(model->file().metadata());
  ASSERT_EQ(tok.size(), 259u);
  generate::GenerateOptions o;
  o.sampling.temperature = 3.0f;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0f;
  o.sampling.min_p = 0.0f;
  o.ignore_eos = true;
  o.max_tokens = 60;
  generate::TextGenerator gen(model, tok, o);
  const generate::GenerateResult r = gen.generate("ab");
  EXPECT_EQ(r.tokens.size(), 60u);
  for (const tokenizer::TokenId id : r.tokens) EXPECT_LT(id, 259);
}

}  // namespace
}  // namespace nascent::test
