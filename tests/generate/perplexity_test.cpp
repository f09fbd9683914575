// Perplexity as llama-perplexity computes it, checked against a float64
// reference forward pass of the same file: chunking, BOS in each chunk's
// first slot, the second half scored, the running figure and the error bar.
#include "nascent/generate/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nascent/backends/cpu/backend.h"
#include "nascent/models/llama/random_model.h"
#include "tests/io/test_files.h"
#include "tests/models/llama/test_model.h"

namespace nascent::generate {
namespace {

using testing::expect_error;

std::string text_of_words(int n) {
  static const char* words[] = {"the", "cat", "sat", "on", "a",  "mat",
                                "and", "dog", "ran", "to", "it", "big"};
  std::string s;
  uint32_t x = 7;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s += words[(x >> 16) % 12];
    s += (x >> 8) % 9 == 0 ? ".\n" : " ";
  }
  return s;
}

// A random-weight model of 300 tokens with a context of 32.
struct SmallModel {
  static std::string write(const testing::TempDir& d) {
    test::ModelSpec spec;
    spec.n_vocab = 300;
    spec.extra = llama::synthetic_spm_vocab(300);
    test::write_model(spec, d.file("m.gguf"));
    return d.file("m.gguf");
  }
  testing::TempDir dir;
  std::string path = write(dir);
  cpu::Backend cpu;
  std::shared_ptr<llama::Model> model = llama::load(path, cpu, {.n_ctx = 32});
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf_file(path);
};

TEST(Perplexity, MatchesAFloat64ReferenceOfLlamaPerplexitysRecipe) {
  const SmallModel m;
  llama::Model& model = *m.model;
  const tokenizer::Tokenizer& tok = m.tok;
  const std::string& path = m.path;
  const std::string text = text_of_words(60);
  const std::vector<int32_t> ids = tok.encode(text, true, false);
  const int64_t n_ctx = 20;
  ASSERT_GE(int64_t(ids.size()), 3 * n_ctx);
  ASSERT_TRUE(tok.add_bos());

  // The recipe, spelled out in float64 on the reference forward pass.
  const int64_t chunks = int64_t(ids.size()) / n_ctx;
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  std::vector<double> running;
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(ids.begin() + c * n_ctx,
                               ids.begin() + (c + 1) * n_ctx);
    chunk[0] = tok.bos();
    const auto logits = test::reference_logits(path, chunk);
    for (int64_t j = n_ctx / 2; j < n_ctx - 1; ++j) {
      double max = -INFINITY, sum = 0;
      for (double v : logits[size_t(j)]) max = std::max(max, v);
      for (double v : logits[size_t(j)]) sum += std::exp(v - max);
      const double lp =
          logits[size_t(j)][size_t(ids[size_t(c * n_ctx + j + 1)])] - max -
          std::log(sum);
      nll -= lp;
      nll2 += lp * lp;
      ++count;
    }
    running.push_back(std::exp(nll / double(count)));
  }
  const double mean = nll / double(count);
  const double ppl = std::exp(mean);
  const double err =
      std::sqrt((nll2 / double(count) - mean * mean) / double(count - 1)) * ppl;

  std::vector<int64_t> heard;
  const PerplexityResult r =
      perplexity(model, tok, text, {.n_ctx = n_ctx},
                 [&](int64_t chunk, double) { heard.push_back(chunk); });
  EXPECT_EQ(r.chunks, chunks);
  EXPECT_EQ(r.scored, count);
  EXPECT_EQ(r.tokens, int64_t(ids.size()));
  ASSERT_EQ(r.running.size(), running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    EXPECT_NEAR(r.running[i], running[i], 1e-4 * running[i]);
  }
  EXPECT_NEAR(r.ppl, ppl, 1e-4 * ppl);
  EXPECT_NEAR(r.uncertainty, err, 1e-3 * err);
  EXPECT_EQ(heard.size(), size_t(chunks));
  EXPECT_EQ(heard.back(), chunks);
  EXPECT_EQ(model.n_past(), 0);  // The cache is left empty.

  const PerplexityResult two =
      perplexity(model, tok, text, {.n_ctx = n_ctx, .n_chunks = 2});
  EXPECT_EQ(two.chunks, 2);
  EXPECT_NEAR(two.ppl, running[1], 1e-4 * running[1]);
}

TEST(Perplexity, RefusesTextsShorterThanTwoContexts) {
  const SmallModel m;
  llama::Model& model = *m.model;
  const tokenizer::Tokenizer& tok = m.tok;
  expect_error<ValueError>(
      [&] { perplexity(model, tok, "the cat", {.n_ctx = 16}); },
      {"perplexity", "a context of 16 needs at least 32"});
  expect_error<ValueError>(
      [&] { perplexity(model, tok, text_of_words(100), {.n_ctx = 64}); },
      {"perplexity", "64", "4 to 32"});
}

}  // namespace
}  // namespace nascent::generate
