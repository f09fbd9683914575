#include "nascent/generate/chat_template.h"

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::generate {
namespace {

struct Builtin {
  std::string_view name;
  std::string_view source;
};

// Written after the formats' published templates (the text they produce,
// not their source): chatml as Qwen and many others use it, Meta's
// Llama-2-chat and Llama-3-Instruct, Gemma's and Phi-3's turns.
constexpr Builtin kBuiltins[] = {
    {"chatml",
     "{%- for message in messages %}"
     "{{- '<|im_start|>' + message.role + '\\n' + message.content + "
     "'<|im_end|>\\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
     "{%- endif %}"},
    {"llama2",
     "{%- if messages and messages[0].role == 'system' %}"
     "{%- set system = messages[0].content %}"
     "{%- set turns = messages[1:] %}"
     "{%- else %}{%- set system = none %}{%- set turns = messages %}"
     "{%- endif %}"
     "{%- for message in turns %}"
     "{%- if (message.role == 'user') != (loop.index0 % 2 == 0) or "
     "message.role not in ['user', 'assistant'] %}"
     "{{- raise_exception('llama2: roles must be an optional system message, "
     "then user and assistant alternating') }}"
     "{%- endif %}"
     "{%- set content = message.content %}"
     "{%- if loop.first and system is not none %}"
     "{%- set content = '<<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + "
     "content %}"
     "{%- endif %}"
     "{%- if message.role == 'user' %}"
     "{{- bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
     "{%- else %}{{- ' ' + content.strip() + ' ' + eos_token }}"
     "{%- endif %}"
     "{%- endfor %}"},
    {"llama3",
     "{{- bos_token }}"
     "{%- for message in messages %}"
     "{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + "
     "message.content | trim + '<|eot_id|>' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}"
     "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
     "{%- endif %}"},
    {"gemma",
     "{{- bos_token }}"
     "{%- for message in messages %}"
     "{%- set role = 'model' if message.role == 'assistant' else "
     "message.role %}"
     "{%- if role == 'system' %}"
     "{{- raise_exception('gemma: there is no system role') }}"
     "{%- endif %}"
     "{{- '<start_of_turn>' + role + '\\n' + message.content | trim + "
     "'<end_of_turn>\\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}"
     "{%- endif %}"},
    {"phi3",
     "{%- for message in messages %}"
     "{{- '<|' + message.role + '|>\\n' + message.content + '<|end|>\\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}"
     "{%- else %}{{- eos_token }}{%- endif %}"},
};

std::string token_text_or_empty(const tokenizer::Tokenizer& tok,
                                tokenizer::TokenId id) {
  return id == tokenizer::kNoToken ? std::string() : tok.token_text(id);
}

}  // namespace

jinja::Value to_jinja(std::span<const ChatMessage> messages) {
  jinja::List list;
  for (const ChatMessage& m : messages) {
    jinja::Dict d;
    d.set("role", jinja::Value(m.role));
    d.set("content", jinja::Value(m.content));
    list.emplace_back(std::move(d));
  }
  return jinja::Value(std::move(list));
}

ChatTemplate::ChatTemplate(std::string_view source, std::string bos_token,
                           std::string eos_token)
    : source_(source),
      template_(source),
      bos_(std::move(bos_token)),
      eos_(std::move(eos_token)) {}

std::vector<std::string_view> ChatTemplate::builtin_names() {
  std::vector<std::string_view> out;
  for (const Builtin& b : kBuiltins) out.push_back(b.name);
  return out;
}

std::optional<std::string_view> ChatTemplate::builtin(std::string_view name) {
  for (const Builtin& b : kBuiltins) {
    if (b.name == name) return b.source;
  }
  return std::nullopt;
}

ChatTemplate ChatTemplate::for_model(const tokenizer::Tokenizer& tok,
                                     std::string_view override_source) {
  std::string_view source = override_source;
  if (auto b = builtin(source)) source = *b;
  if (source.empty()) source = tok.chat_template();
  if (source.empty()) {
    throw ValueError(fmt::format(
        "chat template: the model has no tokenizer.chat_template; give one "
        "with --chat-template FILE or a built-in name ({})",
        fmt::join(builtin_names(), ", ")));
  }
  return ChatTemplate(source, token_text_or_empty(tok, tok.bos()),
                      token_text_or_empty(tok, tok.eos()));
}

std::string ChatTemplate::render(const Inputs& in) const {
  jinja::Dict vars;
  vars.set("messages", in.messages);
  vars.set("tools", in.tools);
  vars.set("documents", jinja::Value::none());
  vars.set("add_generation_prompt", jinja::Value(in.add_generation_prompt));
  vars.set("bos_token", jinja::Value(bos_));
  vars.set("eos_token", jinja::Value(eos_));
  for (const auto& [k, v] : in.extra.items) vars.set(k, v);
  return template_.render(vars, in.now);
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages,
                                bool add_generation_prompt,
                                const jinja::Dict& extra) const {
  Inputs in;
  in.messages = to_jinja(messages);
  in.add_generation_prompt = add_generation_prompt;
  in.extra = extra;
  return render(in);
}

std::vector<tokenizer::TokenId> ChatTemplate::end_of_turn_tokens(
    const tokenizer::Tokenizer& tok, const jinja::Dict& extra) const {
  // Render a user turn and an assistant turn holding a marker; the first
  // control token after the marker (past whitespace) ends the turn.
  static constexpr std::string_view kMarker = "\x01nascent-reply\x01";
  const ChatMessage reply = {"assistant", std::string(kMarker)};
  // Some templates insist on a system message first.
  const std::vector<ChatMessage> probes[] = {
      {{"user", "Hi"}, reply},
      {{"system", "Be brief."}, {"user", "Hi"}, reply}};
  std::string text;
  for (const std::vector<ChatMessage>& probe : probes) {
    try {
      text = apply(probe, false, extra);
      break;
    } catch (const Error&) {
    }
  }
  const size_t at = text.find(kMarker);
  if (at == std::string::npos) return {};
  const std::string after = text.substr(at + kMarker.size());
  for (tokenizer::TokenId id : tok.encode(after, false, true)) {
    const tokenizer::TokenType type = tok.token_type(id);
    if (type == tokenizer::TokenType::control ||
        type == tokenizer::TokenType::user_defined) {
      if (id == tok.bos()) return {};
      return {id};
    }
    const std::string piece = tok.token_to_piece(id);
    if (piece.find_first_not_of(" \t\n") != std::string::npos) return {};
  }
  return {};
}

}  // namespace nascent::generate
