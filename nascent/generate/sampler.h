// Choosing the next token from logits: repetition, frequency and presence
// penalties, then top-k, top-p, min-p, temperature and a seeded draw (the
// order llama.cpp's default sampler chain uses, so its flags mean the same
// here). Temperature <= 0 is greedy: the highest logit after penalties.
//
// Draws use the Philox generator of nascent/core/random.h: draw n of seed s
// is the same number on every platform.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct SamplingOptions {
  float temperature = 0.8f;        // <= 0: greedy.
  int32_t top_k = 40;              // <= 0: off.
  float top_p = 0.95f;             // >= 1: off.
  float min_p = 0.05f;             // <= 0: off.
  float repeat_penalty = 1.0f;     // 1: off.
  float frequency_penalty = 0.0f;  // 0: off.
  float presence_penalty = 0.0f;   // 0: off.
  int32_t repeat_last_n = 64;      // Tokens the penalties look back; -1: all.
  uint64_t seed = 0;
};

struct Candidate {
  tokenizer::TokenId id;
  float logit;
  float p;  // Set by softmax().
};

// The steps, each on the candidates in place (usable on their own).
// Penalises tokens of `recent` (llama.cpp's rule: a positive logit is
// divided by `repeat`, a negative one multiplied, then count * frequency +
// presence is subtracted).
void apply_penalties(std::vector<Candidate>& c,
                     std::span<const tokenizer::TokenId> recent, float repeat,
                     float frequency, float presence);
// Keeps the k highest logits (sorted, highest first); k <= 0 keeps all.
void top_k(std::vector<Candidate>& c, int32_t k);
// Sorts by logit, highest first, and sets p to the softmax.
void softmax(std::vector<Candidate>& c);
// Keeps the smallest prefix whose probability reaches p (at least one).
void top_p(std::vector<Candidate>& c, float p);
// Keeps tokens whose probability is at least p times the largest.
void min_p(std::vector<Candidate>& c, float p);
void apply_temperature(std::vector<Candidate>& c, float t);
// Index of the candidate a uniform u in [0, 1) picks, by the candidates'
// softmax probabilities (softmax() must have run).
size_t pick(const std::vector<Candidate>& c, double u);

class Sampler {
 public:
  // ValueError for options out of range (negative temperature is allowed:
  // greedy; top_p and min_p must lie in [0, 1], penalties be finite).
  explicit Sampler(SamplingOptions options = {});

  // The next token; the logits are left alone. Does not record it: call
  // accept() with the token actually used (also for prompt tokens, so
  // penalties see them).
  tokenizer::TokenId sample(std::span<const float> logits);
  // The distribution sample() draws from for these logits, one entry per
  // id: penalties, filters and temperature applied, 0 for the ids the
  // filters cut; greedy: 1 for the id sample() returns. Draws nothing
  // (speculative decoding's p and q).
  std::vector<float> probabilities(std::span<const float> logits);
  void accept(tokenizer::TokenId id);
  void reset();  // Forgets the history; the draw sequence restarts.

  const SamplingOptions& options() const { return options_; }
  uint64_t draws() const { return draws_; }

 private:
  SamplingOptions options_;
  std::deque<tokenizer::TokenId> history_;
  uint64_t draws_ = 0;
  std::vector<Candidate> candidates_;

  // Leaves in candidates_ the ids sample() may pick and their p (greedy:
  // the best one, p = 1).
  void process(std::span<const float> logits);
};

}  // namespace nascent::generate
