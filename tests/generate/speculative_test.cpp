// Greedy speculative decoding gives exactly the target's greedy tokens
// (TextGenerator alone), whatever the draft: the target itself (every
// proposal kept), its q8_0 copy (most kept) and an unrelated model (few
// kept); fewer target passes than tokens when the draft agrees; the end
// conditions and bad calls.
#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/generate/speculative.h"
#include "nascent/models/llama/random_model.h"
#include "tests/io/test_files.h"

namespace nascent::test {
namespace {

generate::SpeculativeOptions opts(int32_t n_draft, int32_t max_tokens,
                                  bool ignore_eos = false) {
  generate::SpeculativeOptions o;
  o.n_draft = n_draft;
  o.max_tokens = max_tokens;
  o.ignore_eos = ignore_eos;
  return o;
}

cpu::Backend& backend() {
  static cpu::Backend b;
  return b;
}

class Speculative : public ::testing::Test {
 protected:
  void SetUp() override {
    llama::RandomModelConfig c;
    c.n_ctx = 256;
    c.seed = 5;
    llama::write_random_model(c, dir_.file("target.gguf"));
    c.type = QuantType::q8_0;
    llama::write_random_model(c, dir_.file("q8.gguf"));
    c.type = QuantType::f32;
    c.seed = 99;
    llama::write_random_model(c, dir_.file("other.gguf"));
    target_ = llama::load(dir_.file("target.gguf"), backend());
    tok_ = tokenizer::Tokenizer::from_gguf(target_->file().metadata());
  }
  std::vector<tokenizer::TokenId> alone(
      const std::vector<tokenizer::TokenId>& prompt, int32_t n) {
    generate::GenerateOptions g;
    g.sampling.temperature = 0.0f;
    g.max_tokens = n;
    auto m = llama::load(dir_.file("target.gguf"), backend());
    return generate::TextGenerator(m, *tok_, g).generate_tokens(prompt).tokens;
  }
  testing::TempDir dir_;
  std::shared_ptr<llama::Model> target_;
  std::optional<tokenizer::Tokenizer> tok_;
};

TEST_F(Speculative, GreedyOutputIsTheTargetsWhateverTheDraft) {
  const std::vector<tokenizer::TokenId> prompt = tok_->encode("Once upon a");
  const std::vector<tokenizer::TokenId> want = alone(prompt, 40);
  ASSERT_GT(want.size(), 5u);
  struct Case {
    const char* draft;
    int32_t n_draft;
  };
  for (const Case c : {Case{"target.gguf", 4}, Case{"q8.gguf", 3},
                       Case{"other.gguf", 5}, Case{"q8.gguf", 1}}) {
    SCOPED_TRACE(c.draft);
    auto draft = llama::load(dir_.file(c.draft), backend());
    const generate::SpeculativeResult r = generate::speculative_greedy(
        *target_, *draft, *tok_, prompt, opts(c.n_draft, 40));
    EXPECT_EQ(r.tokens, want);
    EXPECT_LE(r.n_accepted, r.n_drafted);
    if (std::string(c.draft) == "target.gguf") {
      // Every proposal agrees: about n_draft + 1 tokens per target pass.
      EXPECT_EQ(r.n_accepted, r.n_drafted);
      EXPECT_LT(r.n_target_passes, int64_t(want.size()) / 2);
    }
  }
}

TEST_F(Speculative, EndsAndErrors) {
  auto draft = llama::load(dir_.file("q8.gguf"), backend());
  const std::vector<tokenizer::TokenId> prompt = tok_->encode("abc");
  generate::SpeculativeResult r =
      generate::speculative_greedy(*target_, *draft, *tok_, prompt, opts(4, 7));
  EXPECT_EQ(r.tokens, alone(prompt, 7));
  // The context (256) fills: the target alone stops at the same place.
  r = generate::speculative_greedy(*target_, *draft, *tok_, prompt,
                                   opts(4, -1, true));
  EXPECT_EQ(r.stop_reason, generate::StopReason::context_full);
  EXPECT_EQ(int64_t(prompt.size() + r.tokens.size()), 256 + 1);
  int seen = 0;
  r = generate::speculative_greedy(
      *target_, *draft, *tok_, prompt, opts(4, 50, true),
      [&](tokenizer::TokenId) { return ++seen < 3; });
  EXPECT_EQ(r.stop_reason, generate::StopReason::callback);
  EXPECT_EQ(r.tokens.size(), 3u);
  testing::expect_error<ValueError>(
      [&] {
        generate::speculative_greedy(*target_, *draft, *tok_, prompt,
                                     opts(0, 5));
      },
      {"n_draft = 0"});
  testing::expect_error<ValueError>(
      [&] { generate::speculative_greedy(*target_, *draft, *tok_, {}, {}); },
      {"0 tokens"});
}

}  // namespace
}  // namespace nascent::test
