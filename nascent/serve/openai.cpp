// OpenAI's request and response shapes. Parameters are checked as OpenAI's
// server checks them (type and range, 400 naming the parameter); unknown
// keys are ignored, as clients send extras (`user`, `metadata`).
#include "nascent/serve/openai.h"

#include <fmt/format.h>

#include "nascent/generate/jinja/value.h"

namespace nascent::serve::openai {
namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", param, message);
}

bool has(const json& b, const char* key) {
  return b.contains(key) && !b.at(key).is_null();
}

std::optional<double> number(const json& b, const char* key, double lo,
                             double hi) {
  if (!has(b, key)) return std::nullopt;
  const json& v = b.at(key);
  if (!v.is_number()) bad(key, fmt::format("'{}' must be a number", key));
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    bad(key, fmt::format("'{}' = {} is outside [{}, {}]", key, x, lo, hi));
  }
  return x;
}

std::optional<int64_t> integer(const json& b, const char* key, int64_t lo,
                               int64_t hi) {
  if (!has(b, key)) return std::nullopt;
  const json& v = b.at(key);
  if (!v.is_number_integer()) {
    bad(key, fmt::format("'{}' must be an integer", key));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)) {
    bad(key, fmt::format("'{}' is above {}", key, hi));
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    bad(key, fmt::format("'{}' = {} is outside [{}, {}]", key, x, lo, hi));
  }
  return x;
}

std::optional<bool> boolean(const json& b, const char* key) {
  if (!has(b, key)) return std::nullopt;
  if (!b.at(key).is_boolean()) {
    bad(key, fmt::format("'{}' must be a boolean", key));
  }
  return b.at(key).get<bool>();
}

// What both endpoints share: sampling, lengths, stop, n, streaming.
void parse_common(const json& b, const Limits& limits, Parsed& p) {
  generate::SamplingOptions& s = p.options.sampling;
  // OpenAI's defaults: plain temperature sampling over the whole
  // vocabulary (no top-k or min-p unless llama.cpp's keys ask).
  s.temperature = float(number(b, "temperature", 0.0, 2.0).value_or(1.0));
  s.top_p = float(number(b, "top_p", 0.0, 1.0).value_or(1.0));
  s.top_k = int32_t(integer(b, "top_k", 0, 1 << 30).value_or(0));
  s.min_p = float(number(b, "min_p", 0.0, 1.0).value_or(0.0));
  s.presence_penalty =
      float(number(b, "presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty =
      float(number(b, "frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.repeat_penalty =
      float(number(b, "repeat_penalty", 1e-3, 100.0).value_or(1.0));
  if (has(b, "seed")) {
    const json& v = b.at("seed");
    if (!v.is_number_integer()) bad("seed", "'seed' must be an integer");
    s.seed =
        v.is_number_unsigned() ? v.get<uint64_t>() : uint64_t(v.get<int64_t>());
    p.has_seed = true;
  }
  p.options.max_tokens = limits.default_max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (auto n = integer(b, key, 1, 1 << 30))
      p.options.max_tokens = int32_t(*n);
  }
  p.options.ignore_eos = boolean(b, "ignore_eos").value_or(false);
  p.n = int32_t(integer(b, "n", 1, limits.max_n).value_or(1));
  p.stream = boolean(b, "stream").value_or(false);
  if (has(b, "stream_options")) {
    const json& so = b.at("stream_options");
    if (!so.is_object()) {
      bad("stream_options", "'stream_options' must be an object");
    }
    p.include_usage = boolean(so, "include_usage").value_or(false);
  }
  if (has(b, "stop")) {
    const json& v = b.at("stop");
    if (v.is_string()) {
      p.options.stop = {v.get<std::string>()};
    } else if (v.is_array() && v.size() <= 4) {
      for (const json& x : v) {
        if (!x.is_string()) bad("stop", "'stop' must hold strings");
        p.options.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "'stop' must be a string or a list of up to 4 strings");
    }
    for (const std::string& x : p.options.stop) {
      if (x.empty()) bad("stop", "'stop' holds an empty string");
    }
  }
  if (has(b, "logit_bias") && !b.at("logit_bias").empty()) {
    bad("logit_bias", "'logit_bias' is not supported");
  }
  if (integer(b, "best_of", 1, 1).value_or(1) != 1) {
    bad("best_of", "'best_of' must be 1");
  }
}

std::vector<tokenizer::TokenId> encode_chat(const tokenizer::Tokenizer& tok,
                                            const std::string& prompt) {
  // BOS as the vocabulary asks, unless the template wrote it (as `nascent
  // chat` does).
  const bool add_bos =
      tok.add_bos() && !(tok.bos() != tokenizer::kNoToken &&
                         prompt.starts_with(tok.token_text(tok.bos())));
  return tok.encode(prompt, add_bos, true);
}

json bytes_of(const std::string& s) {
  json out = json::array();
  for (const unsigned char c : s) out.push_back(int(c));
  return out;
}

json chat_logprobs(const std::vector<SampledToken>& tokens) {
  json content = json::array();
  for (const SampledToken& t : tokens) {
    json top = json::array();
    for (const TokenLogprob& x : t.top) {
      top.push_back({{"token", x.piece},
                     {"logprob", x.logprob},
                     {"bytes", bytes_of(x.piece)}});
    }
    content.push_back({{"token", t.token.piece},
                       {"logprob", t.token.logprob},
                       {"bytes", bytes_of(t.token.piece)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs(const std::vector<SampledToken>& tokens,
                         size_t text_offset) {
  json toks = json::array(), lps = json::array(), tops = json::array(),
       offs = json::array();
  for (const SampledToken& t : tokens) {
    toks.push_back(t.token.piece);
    lps.push_back(t.token.logprob);
    json top = json::object();
    for (const TokenLogprob& x : t.top) top[x.piece] = x.logprob;
    tops.push_back(top);
    offs.push_back(text_offset);
    text_offset += t.token.piece.size();
  }
  return {{"tokens", toks},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offs}};
}

}  // namespace

json error_body(const ApiError& e) {
  return {{"error",
           {{"message", e.what()},
            {"type", e.type()},
            {"param", e.param().empty() ? json(nullptr) : json(e.param())},
            {"code", e.code().empty() ? json(nullptr) : json(e.code())}}}};
}

json error_body(int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status == 503 ? "server_busy"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return error_body(ApiError(status, type, "", message));
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_body(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) bad("", "the request body is not valid JSON");
  if (!j.is_object()) bad("", "the request body must be a JSON object");
  return j;
}

Parsed parse_completion(const json& b, const tokenizer::Tokenizer& tok,
                        const Limits& limits) {
  Parsed p;
  parse_common(b, limits, p);
  if (!has(b, "prompt")) bad("prompt", "'prompt' is required");
  const json& v = b.at("prompt");
  const json* text = &v;
  if (v.is_array() && v.size() == 1 && v[0].is_string()) text = &v[0];
  if (text->is_string()) {
    p.prompt = tok.encode(text->get<std::string>(), true, true);
  } else if (v.is_array() && !v.empty() && v[0].is_number_integer()) {
    for (const json& x : v) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
          x.get<int64_t>() >= int64_t(tok.size())) {
        bad("prompt", fmt::format("'prompt' token ids must be integers in "
                                  "[0, {})",
                                  tok.size()));
      }
      p.prompt.push_back(tokenizer::TokenId(x.get<int64_t>()));
    }
  } else {
    bad("prompt",
        "'prompt' must be a string, a list of one string or a list of token "
        "ids");
  }
  if (p.prompt.empty()) bad("prompt", "'prompt' is empty");
  if (auto lp = integer(b, "logprobs", 0, 5)) {
    p.logprobs = true;
    p.options.top_logprobs = int32_t(*lp);
  }
  if (boolean(b, "echo").value_or(false))
    bad("echo", "'echo' is not supported");
  if (has(b, "suffix")) bad("suffix", "'suffix' is not supported");
  return p;
}

Parsed parse_chat(const json& b, const tokenizer::Tokenizer& tok,
                  const generate::ChatTemplate* tmpl,
                  const jinja::Dict& template_kwargs, const Limits& limits) {
  Parsed p;
  p.chat = true;
  parse_common(b, limits, p);
  if (!has(b, "messages") || !b.at("messages").is_array() ||
      b.at("messages").empty()) {
    bad("messages", "'messages' must be a non-empty list");
  }
  json messages = json::array();
  for (const json& m : b.at("messages")) {
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string()) {
      bad("messages", "each message must be an object with a string 'role'");
    }
    std::string role = m.at("role").get<std::string>();
    if (role == "developer") role = "system";  // Templates know "system".
    if (role != "system" && role != "user" && role != "assistant" &&
        role != "tool") {
      bad("messages", fmt::format("unknown message role '{}'", role));
    }
    json out = m;
    out["role"] = role;
    const json content = m.contains("content") ? m.at("content") : json();
    if (content.is_array()) {
      // Text parts, joined (templates take a string).
      std::string text;
      for (const json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" ||
            !part.contains("text") || !part.at("text").is_string()) {
          bad("messages", "only text content parts are supported");
        }
        text += part.at("text").get<std::string>();
      }
      out["content"] = text;
    } else if (!content.is_string() && !content.is_null()) {
      bad("messages",
          "a message's 'content' must be a string, null or a "
          "list of text parts");
    } else if (content.is_null() && role != "assistant") {
      bad("messages", fmt::format("a '{}' message needs content", role));
    }
    messages.push_back(std::move(out));
  }
  if (auto lp = boolean(b, "logprobs"); lp && *lp) {
    p.logprobs = true;
    p.options.top_logprobs =
        int32_t(integer(b, "top_logprobs", 0, 20).value_or(0));
  } else if (has(b, "top_logprobs")) {
    bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  if (tmpl == nullptr) {
    bad("messages",
        "this server has no chat template (the model has none; start it "
        "with --chat-template FILE|NAME)");
  }
  generate::ChatTemplate::Inputs in;
  in.messages = jinja::parse_json(dump(messages), "messages");
  if (has(b, "tools"))
    in.tools = jinja::parse_json(dump(b.at("tools")), "tools");
  in.add_generation_prompt = true;
  in.extra = template_kwargs;
  std::string prompt;
  try {
    prompt = tmpl->render(in);
  } catch (const jinja::TemplateException& e) {
    bad("messages", fmt::format("the chat template rejected the "
                                "conversation: {}",
                                e.what()));
  } catch (const jinja::TemplateError& e) {
    throw ApiError(
        500, "server_error", "",
        fmt::format("the chat template cannot be rendered: {}", e.what()));
  }
  p.prompt = encode_chat(tok, prompt);
  p.options.stop_tokens = tmpl->end_of_turn_tokens(tok, template_kwargs);
  if (p.prompt.empty()) bad("messages", "the rendered prompt is empty");
  return p;
}

void Choice::add(const Event& e) {
  text += e.text;
  tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
  prompt_tokens = e.prompt_tokens;
  completion_tokens = e.completion_tokens;
  cached_tokens = e.cached_tokens;
  if (e.done) {
    finish = e.finish;
    error = e.error;
  }
}

const char* finish_reason(FinishReason r) {
  return r == FinishReason::length || r == FinishReason::timeout ? "length"
                                                                 : "stop";
}

namespace {

json usage_of(const std::vector<Choice>& choices) {
  int64_t completion = 0;
  for (const Choice& c : choices) completion += c.completion_tokens;
  const int64_t prompt = choices.empty() ? 0 : choices[0].prompt_tokens;
  const int64_t cached = choices.empty() ? 0 : choices[0].cached_tokens;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

}  // namespace

json completion_response(const Parsed& p, const ResponseInfo& info,
                         const std::vector<Choice>& choices) {
  json out_choices = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    const char* reason = finish_reason(c.finish.value_or(FinishReason::stop));
    if (p.chat) {
      out_choices.push_back(
          {{"index", i},
           {"message", {{"role", "assistant"}, {"content", c.text}}},
           {"logprobs", p.logprobs ? chat_logprobs(c.tokens) : json(nullptr)},
           {"finish_reason", reason}});
    } else {
      out_choices.push_back(
          {{"index", i},
           {"text", c.text},
           {"logprobs",
            p.logprobs ? completion_logprobs(c.tokens, 0) : json(nullptr)},
           {"finish_reason", reason}});
    }
  }
  return {{"id", info.id},
          {"object", p.chat ? "chat.completion" : "text_completion"},
          {"created", info.created},
          {"model", info.model},
          {"system_fingerprint", "nascent"},
          {"choices", out_choices},
          {"usage", usage_of(choices)}};
}

json stream_chunk(const Parsed& p, const ResponseInfo& info, int32_t index,
                  const Event& e, bool first) {
  json reason = e.done ? json(finish_reason(e.finish)) : json(nullptr);
  json choice;
  if (p.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!e.text.empty() || !e.done) delta["content"] = e.text;
    choice = {
        {"index", index},
        {"delta", delta},
        {"logprobs", p.logprobs && !e.tokens.empty() ? chat_logprobs(e.tokens)
                                                     : json(nullptr)},
        {"finish_reason", reason}};
  } else {
    choice = {{"index", index},
              {"text", e.text},
              {"logprobs", p.logprobs && !e.tokens.empty()
                               ? completion_logprobs(e.tokens, 0)
                               : json(nullptr)},
              {"finish_reason", reason}};
  }
  json out = {{"id", info.id},
              {"object", p.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", info.created},
              {"model", info.model},
              {"system_fingerprint", "nascent"},
              {"choices", json::array({choice})}};
  if (p.include_usage) out["usage"] = nullptr;
  return out;
}

json usage_chunk(const Parsed& p, const ResponseInfo& info,
                 const std::vector<Choice>& choices) {
  return {{"id", info.id},
          {"object", p.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", info.created},
          {"model", info.model},
          {"system_fingerprint", "nascent"},
          {"choices", json::array()},
          {"usage", usage_of(choices)}};
}

}  // namespace nascent::serve::openai
