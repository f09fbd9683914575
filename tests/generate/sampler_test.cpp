// Sampling steps with exact expected candidates, and the seeded sampler:
// deterministic per seed, with frequencies that follow the probabilities.
#include <cmath>

#include <gtest/gtest.h>

#include "nascent/core/random.h"
#include "nascent/generate/sampler.h"

namespace nascent::generate {
namespace {

std::vector<Candidate> candidates(std::vector<float> logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) {
    c.push_back({tokenizer::TokenId(i), logits[i], 0.0f});
  }
  return c;
}

std::vector<tokenizer::TokenId> ids(const std::vector<Candidate>& c) {
  std::vector<tokenizer::TokenId> out;
  for (const Candidate& x : c) out.push_back(x.id);
  return out;
}

// Logits whose softmax is exactly these probabilities.
std::vector<float> logits_of(std::vector<float> p) {
  for (float& x : p) x = std::log(x);
  return p;
}

TEST(Sampling, Penalties) {
  auto c = candidates({2.0f, -2.0f, 1.0f});
  std::vector<tokenizer::TokenId> recent = {0, 1, 1};
  apply_penalties(c, recent, 2.0f, 0.5f, 0.25f);
  // 2 / 2 - (1 * 0.5 + 0.25); -2 * 2 - (2 * 0.5 + 0.25); untouched.
  EXPECT_FLOAT_EQ(c[0].logit, 0.25f);
  EXPECT_FLOAT_EQ(c[1].logit, -5.25f);
  EXPECT_FLOAT_EQ(c[2].logit, 1.0f);
}

TEST(Sampling, TopKKeepsTheHighestWithTiesById) {
  auto c = candidates({0.1f, 0.5f, 0.3f, 0.5f});
  top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<tokenizer::TokenId>{1, 3}));
  auto all = candidates({0.1f, 0.5f, 0.3f});
  top_k(all, 0);
  EXPECT_EQ(ids(all), (std::vector<tokenizer::TokenId>{1, 2, 0}));
}

TEST(Sampling, SoftmaxTopPMinP) {
  auto c = candidates(logits_of({0.2f, 0.5f, 0.3f}));
  softmax(c);
  EXPECT_EQ(ids(c), (std::vector<tokenizer::TokenId>{1, 2, 0}));
  EXPECT_NEAR(c[0].p, 0.5f, 1e-6);
  EXPECT_NEAR(c[1].p, 0.3f, 1e-6);
  EXPECT_NEAR(c[2].p, 0.2f, 1e-6);
  for (auto [p, kept] : std::vector<std::pair<float, size_t>>{
           {0.45f, 1}, {0.7f, 2}, {0.9f, 3}, {1.0f, 3}}) {
    auto t = candidates(logits_of({0.2f, 0.5f, 0.3f}));
    top_p(t, p);
    EXPECT_EQ(t.size(), kept) << "top_p " << p;
  }
  for (auto [p, kept] : std::vector<std::pair<float, size_t>>{
           {0.7f, 1}, {0.5f, 2}, {0.3f, 3}, {0.0f, 3}}) {
    auto m = candidates(logits_of({0.2f, 0.5f, 0.3f}));
    min_p(m, p);
    EXPECT_EQ(m.size(), kept) << "min_p " << p;
  }
}

TEST(Sampling, TemperatureAndPick) {
  auto c = candidates({1.0f, -3.0f});
  apply_temperature(c, 0.5f);
  EXPECT_EQ(c[0].logit, 2.0f);
  EXPECT_EQ(c[1].logit, -6.0f);
  auto p = candidates(logits_of({0.5f, 0.3f, 0.2f}));
  softmax(p);
  EXPECT_EQ(pick(p, 0.0), 0u);
  EXPECT_EQ(pick(p, 0.49), 0u);
  EXPECT_EQ(pick(p, 0.51), 1u);
  EXPECT_EQ(pick(p, 0.79), 1u);
  EXPECT_EQ(pick(p, 0.81), 2u);
  EXPECT_EQ(pick(p, 0.999999), 2u);
}

TEST(Sampler, GreedyTakesTheHighestAfterPenalties) {
  SamplingOptions o;
  o.temperature = 0.0f;
  o.repeat_penalty = 2.0f;
  o.repeat_last_n = 1;
  Sampler s(o);
  std::vector<float> logits = {5.0f, 4.9f, 1.0f, 5.0f};
  EXPECT_EQ(s.sample(logits), 0);  // Tie: the lowest id.
  s.accept(0);
  EXPECT_EQ(s.sample(logits), 3);  // Token 0 now scores 2.5.
  s.accept(3);                     // The window holds one token: 0 leaves.
  EXPECT_EQ(s.sample(logits), 0);
  EXPECT_EQ(s.draws(), 0u);  // Greedy draws no random numbers.
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingOptions o;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.temperature = 1.0f;
  std::vector<float> flat(100, 0.0f);
  auto run = [&](uint64_t seed) {
    o.seed = seed;
    Sampler s(o);
    std::vector<tokenizer::TokenId> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(flat));
    return out;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
  // Draw n uses Philox block n of the seed: the first token is fixed.
  std::array<uint32_t, 4> r = philox4x32(0, 7);
  double u = uint_to_unit_double(r[0], r[1]);
  EXPECT_EQ(run(7)[0], tokenizer::TokenId(u * 100));
  // reset() restarts the sequence.
  o.seed = 7;
  Sampler s(o);
  tokenizer::TokenId first = s.sample(flat);
  s.sample(flat);
  s.reset();
  EXPECT_EQ(s.sample(flat), first);
}

// Frequencies over many draws match the distribution the options define.
void expect_frequencies(SamplingOptions o, const std::vector<float>& logits,
                        const std::vector<double>& expected) {
  Sampler s(o);
  const int n = 20000;
  std::vector<int> count(logits.size());
  for (int i = 0; i < n; ++i) ++count[size_t(s.sample(logits))];
  for (size_t i = 0; i < expected.size(); ++i) {
    // 5 standard deviations of a binomial at most 0.5: 0.018.
    EXPECT_NEAR(count[i] / double(n), expected[i], 0.018) << "token " << i;
  }
}

TEST(Sampler, FrequenciesFollowTheFilteredDistribution) {
  SamplingOptions o;
  o.seed = 3;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.temperature = 1.0f;
  std::vector<float> logits = logits_of({0.5f, 0.3f, 0.15f, 0.05f});
  expect_frequencies(o, logits, {0.5, 0.3, 0.15, 0.05});
  // Temperature 0.5 squares the probabilities before normalising.
  o.temperature = 0.5f;
  double z = 0.25 + 0.09 + 0.0225 + 0.0025;
  expect_frequencies(o, logits, {0.25 / z, 0.09 / z, 0.0225 / z, 0.0025 / z});
  // top_k 2 renormalises the two best.
  o.temperature = 1.0f;
  o.top_k = 2;
  expect_frequencies(o, logits, {0.5 / 0.8, 0.3 / 0.8, 0, 0});
  // top_p 0.9 keeps 0.5 + 0.3 + 0.15.
  o.top_k = 0;
  o.top_p = 0.9f;
  expect_frequencies(o, logits, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0});
  // min_p 0.5 keeps p >= 0.25.
  o.top_p = 1.0f;
  o.min_p = 0.5f;
  expect_frequencies(o, logits, {0.5 / 0.8, 0.3 / 0.8, 0, 0});
}

TEST(Sampler, ProbabilitiesAreWhatSampleDrawsFrom) {
  SamplingOptions o;
  o.top_k = 3;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.temperature = 1.0f;
  o.presence_penalty = std::log(2.0f);  // Halves the odds of a seen token.
  Sampler s(o);
  s.accept(0);
  const std::vector<float> logits = logits_of({0.4f, 0.3f, 0.2f, 0.1f});
  // Token 0 drops to 0.2; top_k keeps 0, 1 and 2.
  const std::vector<float> p = s.probabilities(logits);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NEAR(p[0], 0.2 / 0.7, 1e-6);
  EXPECT_NEAR(p[1], 0.3 / 0.7, 1e-6);
  EXPECT_NEAR(p[2], 0.2 / 0.7, 1e-6);
  EXPECT_EQ(p[3], 0.0f);
  EXPECT_EQ(s.draws(), 0u);
  expect_frequencies(o, logits, {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0});
  // Greedy: all on the token sample() returns.
  o.temperature = 0.0f;
  Sampler g(o);
  g.accept(0);
  EXPECT_EQ(g.probabilities(logits), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(g.sample(logits), 1);
}

TEST(Sampler, RejectsBadOptionsAndLogits) {
  auto bad = [](auto&& set, const char* what) {
    SamplingOptions o;
    set(o);
    try {
      Sampler s(o);
      ADD_FAILURE() << what;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  bad([](SamplingOptions& o) { o.top_p = 1.5f; }, "top_p 1.5 is outside");
  bad([](SamplingOptions& o) { o.min_p = -0.1f; }, "min_p -0.1 is outside");
  bad([](SamplingOptions& o) { o.repeat_penalty = 0.0f; },
      "repeat_penalty 0 is not a positive number");
  bad([](SamplingOptions& o) { o.temperature = NAN; }, "temperature nan");
  bad([](SamplingOptions& o) { o.repeat_last_n = -2; }, "repeat_last_n -2");
  Sampler s;
  EXPECT_THROW(s.sample(std::vector<float>{}), ValueError);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, NAN}), ValueError);
}

}  // namespace
}  // namespace nascent::generate
