#include "nascent/generate/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/random.h"

namespace nascent::generate {
namespace {

bool by_logit(const Candidate& a, const Candidate& b) {
  // Ties by id, so the order (and the draw) does not depend on the sort.
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

}  // namespace

void apply_penalties(std::vector<Candidate>& c,
                     std::span<const tokenizer::TokenId> recent, float repeat,
                     float frequency, float presence) {
  if (recent.empty() ||
      (repeat == 1.0f && frequency == 0.0f && presence == 0.0f)) {
    return;
  }
  std::unordered_map<tokenizer::TokenId, int> count;
  for (tokenizer::TokenId id : recent) ++count[id];
  for (Candidate& x : c) {
    auto it = count.find(x.id);
    if (it == count.end()) continue;
    x.logit = x.logit <= 0 ? x.logit * repeat : x.logit / repeat;
    x.logit -= float(it->second) * frequency + presence;
  }
}

void top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || size_t(k) >= c.size()) {
    std::sort(c.begin(), c.end(), by_logit);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), by_logit);
  c.resize(size_t(k));
}

void softmax(std::vector<Candidate>& c) {
  std::sort(c.begin(), c.end(), by_logit);
  if (c.empty()) return;
  float max = c[0].logit;
  double sum = 0;
  for (Candidate& x : c) {
    x.p = std::exp(x.logit - max);
    sum += x.p;
  }
  for (Candidate& x : c) x.p = float(x.p / sum);
}

void top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f || c.empty()) return;
  softmax(c);
  double cum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (cum >= p) {
      c.resize(i + 1);
      return;
    }
  }
}

void min_p(std::vector<Candidate>& c, float p) {
  if (p <= 0.0f || c.empty()) return;
  // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p).
  float max = -std::numeric_limits<float>::infinity();
  for (const Candidate& x : c) max = std::max(max, x.logit);
  float bound = max + std::log(p);
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](const Candidate& x) { return x.logit < bound; }),
          c.end());
}

void apply_temperature(std::vector<Candidate>& c, float t) {
  for (Candidate& x : c) x.logit /= t;
}

size_t pick(const std::vector<Candidate>& c, double u) {
  double total = 0;
  for (const Candidate& x : c) total += x.p;
  double target = u * total;
  double cum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (target < cum) return i;
  }
  return c.empty() ? 0 : c.size() - 1;  // Rounding at the very top.
}

Sampler::Sampler(SamplingOptions options) : options_(options) {
  auto check = [](bool ok, const std::string& what) {
    if (!ok) throw ValueError("sampler: " + what);
  };
  const SamplingOptions& o = options_;
  check(std::isfinite(o.temperature),
        fmt::format("temperature {} is not finite", o.temperature));
  check(o.top_p >= 0.0f && o.top_p <= 1.0f,
        fmt::format("top_p {} is outside [0, 1]", o.top_p));
  check(o.min_p >= 0.0f && o.min_p <= 1.0f,
        fmt::format("min_p {} is outside [0, 1]", o.min_p));
  check(std::isfinite(o.repeat_penalty) && o.repeat_penalty > 0.0f,
        fmt::format("repeat_penalty {} is not a positive number",
                    o.repeat_penalty));
  check(std::isfinite(o.frequency_penalty) && std::isfinite(o.presence_penalty),
        "frequency and presence penalties must be finite");
  check(o.repeat_last_n >= -1,
        fmt::format("repeat_last_n {} is below -1", o.repeat_last_n));
}

void Sampler::process(std::span<const float> logits) {
  if (logits.empty()) throw ValueError("sampler: no logits");
  const SamplingOptions& o = options_;
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    // NaN would break the sorts' ordering; it means the model failed.
    if (std::isnan(logits[i])) {
      throw ValueError(fmt::format("sampler: the logit of token {} is NaN", i));
    }
    candidates_[i] = {tokenizer::TokenId(i), logits[i], 0.0f};
  }
  std::vector<tokenizer::TokenId> recent(history_.begin(), history_.end());
  apply_penalties(candidates_, recent, o.repeat_penalty, o.frequency_penalty,
                  o.presence_penalty);
  if (o.temperature <= 0.0f) {
    auto best =
        std::min_element(candidates_.begin(), candidates_.end(), by_logit);
    candidates_ = {{best->id, best->logit, 1.0f}};
    return;
  }
  top_k(candidates_, o.top_k);
  top_p(candidates_, o.top_p);
  min_p(candidates_, o.min_p);
  apply_temperature(candidates_, o.temperature);
  softmax(candidates_);
}

tokenizer::TokenId Sampler::sample(std::span<const float> logits) {
  process(logits);
  if (options_.temperature <= 0.0f) return candidates_[0].id;
  std::array<uint32_t, 4> r = philox4x32(draws_++, options_.seed);
  return candidates_[pick(candidates_, uint_to_unit_double(r[0], r[1]))].id;
}

std::vector<float> Sampler::probabilities(std::span<const float> logits) {
  process(logits);
  std::vector<float> p(logits.size(), 0.0f);
  for (const Candidate& c : candidates_) p[size_t(c.id)] = c.p;
  return p;
}

void Sampler::accept(tokenizer::TokenId id) {
  if (options_.repeat_last_n == 0) return;
  history_.push_back(id);
  if (options_.repeat_last_n > 0 &&
      history_.size() > size_t(options_.repeat_last_n)) {
    history_.pop_front();
  }
}

void Sampler::reset() {
  history_.clear();
  draws_ = 0;
}

}  // namespace nascent::generate
