// The generation loop: the prompt in one forward (reusing what the cache
// already holds), then sample, stream, evaluate the sampled token, repeat.
#include "nascent/generate/generator.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/generate/stream.h"

namespace nascent::generate {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

double GenerateResult::prompt_tokens_per_s() const {
  return prompt_ms > 0.0 ? 1000.0 * double(n_prompt_eval) / prompt_ms : 0.0;
}

double GenerateResult::tokens_per_s() const {
  return generation_ms > 0.0
             ? 1000.0 * double(n_generation_eval) / generation_ms
             : 0.0;
}

TextGenerator::TextGenerator(std::shared_ptr<llama::Model> model,
                             tokenizer::Tokenizer tokenizer,
                             GenerateOptions options)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      options_(std::move(options)),
      sampler_(options_.sampling) {
  if (model_ == nullptr) throw ValueError("TextGenerator: the model is null");
  if (int64_t(tokenizer_.size()) > model_->config().n_vocab) {
    throw ValueError(fmt::format(
        "TextGenerator: the tokenizer has {} tokens, the model only {}",
        tokenizer_.size(), model_->config().n_vocab));
  }
  StopStrings check(options_.stop);  // ValueError for an empty stop string.
}

void TextGenerator::set_options(GenerateOptions options) {
  StopStrings check(options.stop);
  sampler_ = Sampler(options.sampling);
  options_ = std::move(options);
}

void TextGenerator::reset() {
  model_->reset();
  cached_.clear();
  sampler_.reset();
}

GenerateResult TextGenerator::generate(std::string_view prompt,
                                       const TextCallback& on_text) {
  const std::vector<tokenizer::TokenId> ids =
      tokenizer_.encode(prompt, options_.add_special, options_.parse_special);
  return generate_tokens(ids, on_text);
}

GenerateResult TextGenerator::generate_tokens(
    std::span<const tokenizer::TokenId> prompt, const TextCallback& on_text) {
  const int64_t n_ctx = model_->n_ctx();
  if (prompt.empty() || int64_t(prompt.size()) > n_ctx) {
    throw ValueError(fmt::format(
        "TextGenerator: the prompt has {} tokens; it needs 1 to n_ctx = {}",
        prompt.size(), n_ctx));
  }
  GenerateResult r;
  r.prompt_tokens.assign(prompt.begin(), prompt.end());

  // Reuse the cached prefix, but evaluate at least the last prompt token:
  // its logits give the first sample.
  size_t common = 0;
  while (common < cached_.size() && common + 1 < prompt.size() &&
         cached_[common] == prompt[common]) {
    ++common;
  }
  if (int64_t(common) > model_->n_past()) common = size_t(model_->n_past());
  cached_.resize(common);
  sampler_.reset();
  for (const tokenizer::TokenId id : prompt) sampler_.accept(id);

  const auto t_prompt = Clock::now();
  Tensor logits = model_->forward(prompt.subspan(common), int64_t(common));
  cached_.assign(prompt.begin(), prompt.end());
  r.n_prompt_eval = int64_t(prompt.size() - common);

  StreamingDetokenizer detok(tokenizer_, options_.print_special);
  StopStrings stops(options_.stop);
  bool keep_going = true;
  auto emit = [&](const std::string& text) {
    // Nothing more once the callback asked to stop.
    if (text.empty() || !keep_going) return;
    r.text += text;
    if (on_text && !on_text(text)) keep_going = false;
  };

  auto t_gen = Clock::now();
  const int64_t max = options_.max_tokens;
  bool done = max == 0;
  if (done) r.prompt_ms = ms_since(t_prompt);
  while (!done) {
    const std::vector<float> row = logits.to_vector<float>();
    // A model may have more rows than the vocabulary has tokens (padding):
    // those ids have no text and are never sampled.
    const tokenizer::TokenId id =
        sampler_.sample(std::span<const float>(row).first(tokenizer_.size()));
    sampler_.accept(id);
    r.tokens.push_back(id);
    if (r.tokens.size() == 1) {
      r.prompt_ms = ms_since(t_prompt);
      t_gen = Clock::now();
    }
    if (!options_.ignore_eos &&
        (tokenizer_.is_eog(id) ||
         std::find(options_.stop_tokens.begin(), options_.stop_tokens.end(),
                   id) != options_.stop_tokens.end())) {
      r.stop_reason = StopReason::eog;
      break;
    }
    emit(stops.push(detok.push(id)));
    if (stops.stopped()) {
      r.stop_reason = StopReason::stop_string;
      break;
    }
    if (!keep_going) {
      r.stop_reason = StopReason::callback;
      break;
    }
    if (max > 0 && int64_t(r.tokens.size()) >= max) {
      r.stop_reason = StopReason::max_tokens;
      break;
    }
    if (int64_t(cached_.size()) >= n_ctx) {
      r.stop_reason = StopReason::context_full;
      break;
    }
    const tokenizer::TokenId next[1] = {id};
    logits = model_->forward(next, int64_t(cached_.size()));
    cached_.push_back(id);
    ++r.n_generation_eval;
  }
  if (!r.tokens.empty()) r.generation_ms = ms_since(t_gen);
  if (r.stop_reason != StopReason::stop_string) {
    emit(stops.push(detok.flush()));
    if (!stops.stopped()) emit(stops.flush());
  }
  return r;
}

}  // namespace nascent::generate
