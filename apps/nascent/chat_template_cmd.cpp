// `nascent chat-template render`: renders a chat template for a
// conversation given as JSON, as Hugging Face's apply_chat_template would
// (the peer test compares it with Jinja2 byte for byte). The template is a
// file, a built-in name or a model's (-m); the prompt goes to stdout as is.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "apps/nascent/chat_common.h"
#include "apps/nascent/command.h"
#include "nascent/core/error.h"
#include "nascent/io/gguf_reader.h"

namespace {

using namespace nascent;

struct RenderArgs {
  std::string template_arg;
  std::string model;
  std::string messages = "[]";
  std::string tools;
  std::string kwargs;
  std::string bos = "<s>";
  std::string eos = "</s>";
  bool add_generation_prompt = false;
  int64_t now = -1;
};

int render(const RenderArgs& a) {
  std::string source;
  std::string bos = a.bos, eos = a.eos;
  if (!a.model.empty()) {
    tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf_file(a.model);
    if (a.template_arg.empty()) source = tok.chat_template();
    if (tok.bos() != tokenizer::kNoToken) bos = tok.token_text(tok.bos());
    if (tok.eos() != tokenizer::kNoToken) eos = tok.token_text(tok.eos());
    if (source.empty() && a.template_arg.empty()) {
      throw ValueError(fmt::format(
          "chat-template: {} has no tokenizer.chat_template", a.model));
    }
  }
  if (!a.template_arg.empty())
    source = cli::chat_template_source(a.template_arg);
  if (source.empty()) {
    throw ValueError("chat-template render: give --template FILE|NAME or -m");
  }
  generate::ChatTemplate::Inputs in;
  in.messages = jinja::parse_json(cli::json_argument(a.messages), "--messages");
  if (!in.messages.is_list())
    throw ValueError("--messages: expected a JSON list");
  if (!a.tools.empty()) {
    in.tools = jinja::parse_json(cli::json_argument(a.tools), "--tools");
  }
  in.add_generation_prompt = a.add_generation_prompt;
  in.extra = cli::parse_template_kwargs(cli::json_argument(a.kwargs),
                                        "--chat-template-kwargs");
  if (a.now >= 0) in.now = static_cast<std::time_t>(a.now);
  std::optional<generate::ChatTemplate> t;
  try {
    t.emplace(source, bos, eos);
  } catch (const jinja::TemplateError& e) {
    throw ValueError(fmt::format("chat-template: {}", e.what()));
  }
  const std::string text = cli::render_chat(*t, in, "chat-template");
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "chat-template",
    "render a chat template for a conversation (render), list built-ins",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<RenderArgs>();
      sub.require_subcommand(1);
      CLI::App* r = sub.add_subcommand(
          "render",
          "print the prompt a Jinja chat template makes of a "
          "conversation (as Hugging Face's generate::apply_chat_template)");
      r->add_option(
          "--template,-t", a->template_arg,
          fmt::format(
              "a Jinja FILE or a built-in format ({})",
              fmt::join(generate::ChatTemplate::builtin_names(), ", ")));
      r->add_option("-m,--model", a->model,
                    "a GGUF file: its template, BOS and EOS");
      r->add_option("--messages", a->messages,
                    "the conversation: JSON list of {\"role\", \"content\", "
                    "...}, or @FILE");
      r->add_option("--tools", a->tools, "tools as JSON (or @FILE)");
      r->add_option("--chat-template-kwargs", a->kwargs,
                    "extra variables as a JSON object (or @FILE)");
      r->add_option("--bos", a->bos, "bos_token (default <s>, or the model's)");
      r->add_option("--eos", a->eos,
                    "eos_token (default </s>, or the model's)");
      r->add_flag("--add-generation-prompt", a->add_generation_prompt,
                  "end with the assistant's turn opened");
      r->add_option("--now", a->now,
                    "the time strftime_now() formats, in seconds since the "
                    "epoch (default: now)");
      CLI::App* l = sub.add_subcommand("list", "the built-in formats");
      return [=]() {
        if (l->parsed()) {
          for (std::string_view n : generate::ChatTemplate::builtin_names()) {
            fmt::print("{}\n", n);
          }
          return 0;
        }
        return render(*a);
      };
    });
