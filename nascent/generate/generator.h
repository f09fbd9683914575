// Text generation with a LLaMA model: tokenize the prompt, run it through
// the model in one batch, then sample token after token, streaming the text
// as it forms (whole UTF-8 characters only, stop strings cut out).
//
//   GenerateOptions options;
//   options.max_tokens = 64;
//   TextGenerator gen(model, Tokenizer::from_gguf(model->file().metadata()),
//                 options);
//   GenerateResult r = gen.generate("Once upon a time",
//       [](std::string_view text) { std::fputs(...); return true; });
//
// The generator remembers which tokens the model's KV cache holds: a prompt
// that starts with them (the next turn of a chat, rendered in full) only
// evaluates the new tokens. Call reset() after running the model yourself
// between two calls: the generator cannot see what that did to the cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nascent/generate/sampler.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct GenerateOptions {
  SamplingOptions sampling;
  // Tokens to generate at most; < 0: until end of generation or a full
  // context.
  int32_t max_tokens = 128;
  // Text that ends generation; it and what follows are not returned.
  std::vector<std::string> stop;
  // Tokenization of generate()'s prompt: BOS as the vocabulary asks, and
  // control tokens written in the text ("<|im_start|>") parsed as such.
  bool add_special = true;
  bool parse_special = true;
  // Keep going past end-of-generation tokens.
  bool ignore_eos = false;
  // More tokens that end generation like EOS (a chat template's end of
  // turn, ChatTemplate::end_of_turn_tokens).
  std::vector<tokenizer::TokenId> stop_tokens;
  // Print control tokens' text instead of nothing.
  bool print_special = false;
};

enum class StopReason {
  eog,           // An end-of-generation token (EOS, EOT) was sampled.
  stop_string,   // One of GenerateOptions::stop appeared.
  max_tokens,    // GenerateOptions::max_tokens reached.
  context_full,  // The model's context (n_ctx) is full.
  callback,      // The text callback returned false.
};

struct GenerateResult {
  std::vector<tokenizer::TokenId> prompt_tokens;
  std::vector<tokenizer::TokenId>
      tokens;        // Sampled tokens (the end token included).
  std::string text;  // What the callback was given, joined.
  StopReason stop_reason = StopReason::max_tokens;
  int64_t n_prompt_eval = 0;      // Prompt tokens evaluated (not cached).
  double prompt_ms = 0.0;         // Prompt evaluation and the first sample.
  double generation_ms = 0.0;     // The rest: one forward + sample per token.
  int64_t n_generation_eval = 0;  // Forwards counted in generation_ms.

  double prompt_tokens_per_s() const;
  double tokens_per_s() const;  // Generation.
};

// Receives text as it forms; return false to stop.
using TextCallback = std::function<bool(std::string_view text)>;

class TextGenerator {
 public:
  // ValueError for bad options (see Sampler, StopStrings).
  TextGenerator(std::shared_ptr<llama::Model> model,
                tokenizer::Tokenizer tokenizer, GenerateOptions options = {});

  // Tokenizes the prompt (options().add_special, parse_special) and
  // generates.
  GenerateResult generate(std::string_view prompt,
                          const TextCallback& on_text = {});
  // Generates after these prompt tokens. The longest prefix of them the KV
  // cache already holds is reused (at least the last one is evaluated).
  // ValueError for an empty prompt or one longer than the context.
  GenerateResult generate_tokens(std::span<const tokenizer::TokenId> prompt,
                                 const TextCallback& on_text = {});

  // Forgets the cache and the sampler's history.
  void reset();
  // The tokens the model's KV cache holds, in order.
  const std::vector<tokenizer::TokenId>& cached_tokens() const {
    return cached_;
  }

  llama::Model& model() { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  const GenerateOptions& options() const { return options_; }
  // Changes the options for the next call (the sampler restarts).
  void set_options(GenerateOptions options);

 private:
  std::shared_ptr<llama::Model> model_;
  tokenizer::Tokenizer tokenizer_;
  GenerateOptions options_;
  Sampler sampler_;
  std::vector<tokenizer::TokenId> cached_;
};

}  // namespace nascent::generate
