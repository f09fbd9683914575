// Chat prompts in the format a model was fine-tuned on. A GGUF file carries
// it as Jinja source (tokenizer.chat_template, Hugging Face's convention);
// ChatTemplate renders it with the Jinja interpreter (nascent/generate/
// jinja/) exactly as Hugging Face's apply_chat_template does: the variables
// messages, tools (none unless given), documents (none),
// add_generation_prompt, bos_token and eos_token, plus any extra ones
// (llama.cpp's --chat-template-kwargs, e.g. enable_thinking).
//
//   ChatTemplate t(tok.chat_template(), "<s>", "</s>");
//   std::vector<ChatMessage> chat = {{"user", "Hi!"}};
//   std::string prompt = t.apply(chat, /*add_generation_prompt*/ true);
//
// Built-in formats (chatml, llama2, llama3, gemma, phi3) can stand in for a
// file's template by name. There is no fallback: a template that does not
// parse or render raises jinja::TemplateError naming the line.
#pragma once

#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nascent/generate/jinja/template.h"
#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"...
  std::string content;
};

class ChatTemplate {
 public:
  // jinja::TemplateError if the source does not parse.
  ChatTemplate(std::string_view source, std::string bos_token,
               std::string eos_token);

  // The names of the built-in formats, and their Jinja source (nothing for
  // other names).
  static std::vector<std::string_view> builtin_names();
  static std::optional<std::string_view> builtin(std::string_view name);

  // The model's template (name_or_source empty) or an override: a built-in
  // name or Jinja source. bos/eos come from the vocabulary. ValueError when
  // the model has no template and none is given, saying how to give one.
  static ChatTemplate for_model(const tokenizer::Tokenizer& tok,
                                std::string_view override_source = {});

  struct Inputs {
    jinja::Value messages;  // A list of {"role": ..., "content": ...}.
    jinja::Value tools = jinja::Value::none();
    bool add_generation_prompt = true;
    jinja::Dict extra;  // More variables; they override the ones above.
    std::time_t now = std::time(nullptr);  // For strftime_now().
  };
  std::string render(const Inputs& inputs) const;
  std::string apply(std::span<const ChatMessage> messages,
                    bool add_generation_prompt,
                    const jinja::Dict& extra = {}) const;

  // The control tokens that end an assistant turn in this template (the
  // first control token after an assistant message: <|im_end|>, <|eot_id|>,
  // <end_of_turn>, </s>...); generation stops at them beside EOS. Empty
  // when there is none or a probe conversation does not render.
  std::vector<tokenizer::TokenId> end_of_turn_tokens(
      const tokenizer::Tokenizer& tok, const jinja::Dict& extra = {}) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  jinja::Template template_;
  std::string bos_, eos_;
};

// The messages as the template's `messages` variable.
jinja::Value to_jinja(std::span<const ChatMessage> messages);

}  // namespace nascent::generate
