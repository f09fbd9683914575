// `nascent chat`: an interactive conversation with a LLaMA GGUF model in its
// chat template (chatml or llama-2, from tokenizer.chat_template). Reads one
// user message per line from stdin (a terminal or a pipe); the reply streams
// to stdout. The whole conversation is rendered each turn and the KV cache
// keeps the part that did not change, so only the new tokens are evaluated.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "nascent/core/error.h"
#include "nascent/generate/chat_template.h"

namespace {

using namespace nascent;

struct ChatArgs {
  cli::ModelArgs model;
  std::string system;
  std::string format;
  bool timings = false;
};

int chat(const ChatArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = cli::load_model(a.model);
  Tokenizer tok = Tokenizer::from_gguf(model->file().metadata());
  const double load_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
  ChatFormat format = detect_chat_format(tok.chat_template());
  if (!a.format.empty()) {
    const auto f = chat_format_from_name(a.format);
    if (!f) {
      throw ValueError(fmt::format(
          "chat: unknown --chat-template '{}' (chatml, llama2)", a.format));
    }
    format = *f;
  }
  const std::string bos =
      tok.bos() != kNoToken ? tok.token_text(tok.bos()) : "";
  const std::string eos =
      tok.eos() != kNoToken ? tok.token_text(tok.eos()) : "";
  TextGenerator gen(model, tok, cli::generate_options(a.model));
  std::vector<ChatMessage> messages;
  if (!a.system.empty()) messages.push_back({"system", a.system});
  const bool interactive = isatty(0) != 0;
  if (interactive) {
    fmt::print(stderr, "nascent chat: {} template; empty line or Ctrl-D ends\n",
               name(format));
  }
  std::string line;
  while (true) {
    if (interactive) fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line) || (interactive && line.empty())) break;
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const std::string prompt =
        apply_chat_template(format, messages, true, bos, eos);
    // llama2's template spells out BOS; chatml gets it from the vocabulary.
    const bool add_bos = format == ChatFormat::chatml && tok.add_bos();
    const std::vector<TokenId> ids = tok.encode(prompt, add_bos, true);
    const GenerateResult r =
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
                  sub.add_option("--chat-template", a->format,
                                 "chatml or llama2 (default: from the file)");
                  sub.add_flag("--timings", a->timings,
                               "print the timings after each reply");
                  return [a] { return chat(*a); };
                });
