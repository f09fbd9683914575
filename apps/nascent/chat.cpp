// `nascent chat`: an interactive conversation with a LLaMA GGUF model in its
// chat template (the Jinja source in tokenizer.chat_template, or
// --chat-template FILE|NAME), rendered as Hugging Face does. Reads one
// user message per line from stdin (a terminal or a pipe); the reply streams
// to stdout. The whole conversation is rendered each turn and the KV cache
// keeps the part that did not change, so only the new tokens are evaluated.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "apps/nascent/chat_common.h"
#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "nascent/core/error.h"
#include "nascent/generate/chat_template.h"

namespace {

using namespace nascent;

struct ChatArgs {
  cli::ModelArgs model;
  std::string system;
  cli::ChatTemplateArgs tmpl;
  bool timings = false;
};

int chat(const ChatArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = cli::load_model(a.model);
  tokenizer::Tokenizer tok =
      tokenizer::Tokenizer::from_gguf(model->file().metadata());
  const double load_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
  const generate::ChatTemplate tmpl =
      cli::load_chat_template(tok, a.tmpl, "chat");
  const jinja::Dict kwargs =
      cli::parse_template_kwargs(a.tmpl.kwargs, "--chat-template-kwargs");
  generate::GenerateOptions options = cli::generate_options(a.model);
  // The template's end-of-turn token stops a reply beside EOS.
  options.stop_tokens = tmpl.end_of_turn_tokens(tok, kwargs);
  if (a.tmpl.verbose_prompt) cli::print_stop_tokens(tok, options.stop_tokens);
  generate::TextGenerator gen(model, tok, options);
  std::vector<generate::ChatMessage> messages;
  if (!a.system.empty()) messages.push_back({"system", a.system});
  const bool interactive = isatty(0) != 0;
  if (interactive) {
    fmt::print(stderr, "nascent chat: {} template; empty line or Ctrl-D ends\n",
               a.tmpl.chat_template.empty() ? "the model's"
                                            : a.tmpl.chat_template.c_str());
  }
  std::string line;
  while (true) {
    if (interactive) fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line) || (interactive && line.empty())) break;
    if (line.empty()) continue;
    messages.push_back({"user", line});
    generate::ChatTemplate::Inputs in;
    in.messages = to_jinja(messages);
    in.add_generation_prompt = true;
    in.extra = kwargs;
    const std::string prompt = cli::render_chat(tmpl, in, "chat");
    const std::vector<tokenizer::TokenId> ids =
        cli::encode_chat_prompt(tok, prompt, a.tmpl.verbose_prompt);
    const generate::GenerateResult r =
        gen.generate_tokens(ids, [](std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;
        });
    fmt::print("\n");
    std::fflush(stdout);
    if (a.timings) cli::print_timings(r, load_ms);
    messages.push_back({"assistant", r.text});
  }
  return 0;
}

}  // namespace

NASCENT_COMMAND("chat",
                "chat with a LLaMA GGUF model in its chat template (like "
                "llama-cli -cnv)",
                [](CLI::App& sub) -> std::function<int()> {
                  auto a = std::make_shared<ChatArgs>();
                  cli::add_model_options(sub, a->model);
                  sub.add_option("--system-prompt,--sys", a->system,
                                 "system message");
                  cli::add_chat_template_options(sub, a->tmpl);
                  sub.add_flag("--timings", a->timings,
                               "print the timings after each reply");
                  return [a] { return chat(*a); };
                });
