#include "apps/nascent/chat_common.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/io/file.h"

namespace nascent::cli {
namespace {

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot read '{}'", what, path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string override_hint() {
  return fmt::format(
      "; give another with --chat-template FILE or a built-in name ({})",
      fmt::join(generate::ChatTemplate::builtin_names(), ", "));
}

}  // namespace

void add_chat_template_options(CLI::App& sub, ChatTemplateArgs& a) {
  sub.add_option(
      "--chat-template", a.chat_template,
      fmt::format("a Jinja template FILE or a built-in format "
                  "({}) instead of the model's",
                  fmt::join(generate::ChatTemplate::builtin_names(), ", ")));
  sub.add_option("--chat-template-kwargs", a.kwargs,
                 "extra template variables as a JSON object, e.g. "
                 "'{\"enable_thinking\": false}'");
  sub.add_flag("--verbose-prompt", a.verbose_prompt,
               "print the rendered prompt and its token count to stderr");
}

std::string chat_template_source(const std::string& file_or_name) {
  if (auto b = generate::ChatTemplate::builtin(file_or_name))
    return std::string(*b);
  std::ifstream probe(file_or_name, std::ios::binary);
  if (!probe) {
    throw ValueError(fmt::format(
        "--chat-template '{}' is neither a readable file nor a built-in "
        "format ({})",
        file_or_name,
        fmt::join(generate::ChatTemplate::builtin_names(), ", ")));
  }
  return read_text(file_or_name, "--chat-template");
}

generate::ChatTemplate load_chat_template(const tokenizer::Tokenizer& tok,
                                          const ChatTemplateArgs& a,
                                          const char* command) {
  const std::string source = a.chat_template.empty()
                                 ? std::string()
                                 : chat_template_source(a.chat_template);
  try {
    return generate::ChatTemplate::for_model(tok, source);
  } catch (const jinja::TemplateError& e) {
    throw ValueError(
        fmt::format("{}: the {} chat template cannot be parsed: {}{}", command,
                    a.chat_template.empty() ? "model's" : "given", e.what(),
                    override_hint()));
  }
}

jinja::Dict parse_template_kwargs(const std::string& json, const char* what) {
  if (json.empty()) return {};
  jinja::Value v = jinja::parse_json(json, what);
  if (!v.is_dict()) {
    throw ValueError(
        fmt::format("{}: expected a JSON object, got {}", what, v.type_name()));
  }
  return v.dict();
}

std::string render_chat(const generate::ChatTemplate& t,
                        const generate::ChatTemplate::Inputs& in,
                        const char* command) {
  try {
    return t.render(in);
  } catch (const jinja::TemplateException& e) {
    throw ValueError(
        fmt::format("{}: the chat template rejected the conversation: {}",
                    command, e.what()));
  } catch (const jinja::TemplateError& e) {
    throw ValueError(
        fmt::format("{}: the chat template cannot be rendered: {}{}", command,
                    e.what(), override_hint()));
  }
}

std::vector<tokenizer::TokenId> encode_chat_prompt(
    const tokenizer::Tokenizer& tok, const std::string& prompt, bool verbose) {
  const bool add_bos =
      tok.add_bos() && !(tok.bos() != tokenizer::kNoToken &&
                         prompt.starts_with(tok.token_text(tok.bos())));
  std::vector<tokenizer::TokenId> ids = tok.encode(prompt, add_bos, true);
  if (verbose) {
    fmt::print(stderr, "prompt ({} tokens):\n{}\n[end of prompt]\n", ids.size(),
               prompt);
  }
  return ids;
}

void print_stop_tokens(const tokenizer::Tokenizer& tok,
                       const std::vector<tokenizer::TokenId>& ids) {
  std::vector<std::string> names;
  for (tokenizer::TokenId id : ids) {
    names.push_back(fmt::format("{} '{}'", id, tok.token_text(id)));
  }
  fmt::print(stderr, "end-of-turn tokens: {}\n",
             names.empty() ? std::string("none (EOS only)")
                           : fmt::format("{}", fmt::join(names, ", ")));
}

std::string json_argument(const std::string& arg) {
  if (!arg.empty() && arg[0] == '@') return read_text(arg.substr(1), "JSON");
  return arg;
}

}  // namespace nascent::cli
