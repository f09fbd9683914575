// The OpenAI API's JSON, without HTTP: request bodies of
// /v1/chat/completions and /v1/completions checked and turned into
// scheduler requests, and the responses, stream chunks and errors built
// as OpenAI's server writes them (the `openai` Python client parses them).
//
//   openai::Parsed p = openai::parse_completion(body, tok);  // ApiError
//   Request r = scheduler.submit(p.prompt, p.options);
//   ... openai::Choice c; c.add(event) for each event ...
//   json out = openai::completion_response(p, "m", id, created, {c});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nascent/core/error.h"
#include "nascent/generate/chat_template.h"
#include "nascent/serve/scheduler.h"

namespace nascent::serve::openai {

using json = nlohmann::json;

// A request the API refuses: HTTP status and OpenAI's error type
// ("invalid_request_error", "authentication_error", ...), the parameter at
// fault ("" for none) and an optional code.
class ApiError : public ValueError {
 public:
  ApiError(int status, std::string type, std::string param,
           const std::string& message, std::string code = {})
      : ValueError(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_, param_, code_;
};

// {"error": {"message", "type", "param", "code"}}.
json error_body(const ApiError& e);
json error_body(int status, const std::string& message);
// JSON text that is always valid UTF-8 (bad bytes become U+FFFD).
std::string dump(const json& j);

// A parsed completion request.
struct Parsed {
  bool chat = false;
  std::vector<tokenizer::TokenId> prompt;
  RequestOptions options;  // Seed, when the body has none, is the caller's.
  bool has_seed = false;
  int32_t n = 1;  // Choices.
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage.
  bool logprobs = false;       // Chat: logprobs; completions: logprobs >= 0.
};

// Limits a server applies to every request.
struct Limits {
  int32_t max_n = 16;
  // max_tokens when the body gives none (< 0: until the context is full).
  int32_t default_max_tokens = -1;
};

// The body's JSON text, parsed (ApiError 400 when it is not a JSON object).
json parse_body(const std::string& body);

// /v1/completions: prompt (a string, a list of token ids, or a list of one
// string), max_tokens, temperature, top_p, seed, presence_penalty,
// frequency_penalty, stop (a string or up to 4), n, stream,
// stream_options, logprobs (0 to 5), echo (false only), and llama.cpp's
// top_k, min_p, repeat_penalty. ApiError 400 naming the parameter for a
// wrong type or value.
Parsed parse_completion(const json& body, const tokenizer::Tokenizer& tok,
                        const Limits& limits = {});
// /v1/chat/completions: messages (role, content as a string, null or a list
// of text parts) rendered by the chat template, the parameters above, and
// logprobs (bool) with top_logprobs (0 to 20), max_completion_tokens. The
// template's end-of-turn tokens end a reply. `tmpl` null: ApiError 400
// saying that the server has no chat template.
Parsed parse_chat(const json& body, const tokenizer::Tokenizer& tok,
                  const generate::ChatTemplate* tmpl,
                  const jinja::Dict& template_kwargs,
                  const Limits& limits = {});

// One choice as its events arrive.
struct Choice {
  std::string text;
  std::vector<SampledToken> tokens;
  std::optional<FinishReason> finish;
  std::string error;
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  void add(const Event& e);
};

// "stop" or "length" (a timeout reads as "length"; cancelled and failed
// requests have no OpenAI reason and read as "stop").
const char* finish_reason(FinishReason r);

struct ResponseInfo {
  std::string id;     // "chatcmpl-..." or "cmpl-...".
  std::string model;  // The served model's name.
  int64_t created = 0;
};

// The whole response of a non-streaming request.
json completion_response(const Parsed& p, const ResponseInfo& info,
                         const std::vector<Choice>& choices);
// One stream chunk for choice `index` carrying event e (text, logprobs and,
// on the last event, finish_reason). `first`: a chat chunk's delta also
// carries the role.
json stream_chunk(const Parsed& p, const ResponseInfo& info, int32_t index,
                  const Event& e, bool first);
// The usage chunk stream_options.include_usage asks for (no choices).
json usage_chunk(const Parsed& p, const ResponseInfo& info,
                 const std::vector<Choice>& choices);

}  // namespace nascent::serve::openai
