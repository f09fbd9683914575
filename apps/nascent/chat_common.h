// What `chat`, `generate` and `chat-template` share: choosing the chat
// template (the model's, a file or a built-in name), extra template
// variables from JSON, and errors that say how to override a template that
// cannot be rendered.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "nascent/generate/chat_template.h"

namespace nascent::cli {

struct ChatTemplateArgs {
  std::string chat_template;  // FILE or a built-in name; empty: the model's.
  std::string kwargs;         // JSON object.
  bool verbose_prompt = false;
};

// --chat-template, --chat-template-kwargs, --verbose-prompt.
void add_chat_template_options(CLI::App& sub, ChatTemplateArgs& a);

// The Jinja source --chat-template names: a built-in format or a file's
// text. ValueError when it is neither.
std::string chat_template_source(const std::string& file_or_name);
// The template for a model, parsed; errors name `command` and say how to
// override the template.
generate::ChatTemplate load_chat_template(const tokenizer::Tokenizer& tok,
                                          const ChatTemplateArgs& a,
                                          const char* command);
// A JSON object as template variables ("" gives none). ValueError for bad
// JSON or JSON that is not an object.
jinja::Dict parse_template_kwargs(const std::string& json, const char* what);

// Renders, turning a template's failure into an error that names `command`
// and says how to override the template.
std::string render_chat(const generate::ChatTemplate& t,
                        const generate::ChatTemplate::Inputs& in,
                        const char* command);

// The token ids of a rendered chat prompt: BOS as the vocabulary asks,
// unless the template wrote it already. With `verbose`, prints the prompt
// and its token count to stderr.
std::vector<tokenizer::TokenId> encode_chat_prompt(
    const tokenizer::Tokenizer& tok, const std::string& prompt, bool verbose);
// "end-of-turn tokens: ..." to stderr (--verbose-prompt).
void print_stop_tokens(const tokenizer::Tokenizer& tok,
                       const std::vector<tokenizer::TokenId>& ids);

// JSON text, or @FILE for a file's.
std::string json_argument(const std::string& arg);

}  // namespace nascent::cli
