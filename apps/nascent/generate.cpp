// `nascent generate`: a LLaMA GGUF model continues a prompt, streaming the
// text to stdout and the timings to stderr, with llama-cli's flags.
//
// For tests against llama.cpp: --tokens gives the prompt as ids (no
// tokenizer involved), --dump-logits writes the logits of every prompt
// position as raw little-endian f32 [n_tokens, n_vocab], --print-ids prints
// the generated ids as [id, ...] instead of the text.
//
// --chat makes the prompt one user message in the model's chat template (or
// --chat-template's), answered in one turn that stops at the template's
// end-of-turn token: `nascent chat` for a single message, scriptable.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "apps/nascent/chat_common.h"
#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "nascent/core/error.h"
#include "nascent/generate/speculative.h"
#include "nascent/generate/stream.h"

namespace {

using namespace nascent;

struct GenerateArgs {
  cli::ModelArgs model;
  std::string prompt;
  std::string file;
  std::string tokens;
  std::string dump_logits;
  bool no_escape = false;
  bool print_ids = false;
  bool no_bos = false;
  bool chat = false;
  std::string system;
  cli::ChatTemplateArgs tmpl;
  std::string model_draft;  // Speculative decoding.
  int32_t n_draft = 4;
};

// Speculative decoding with a draft model: the target's own greedy tokens,
// or tokens from its sampling distribution, streamed, and the acceptance
// figures on stderr.
int run_speculative(const GenerateArgs& a, llama::Model& target,
                    const tokenizer::Tokenizer& tok,
                    const std::vector<tokenizer::TokenId>& ids,
                    const generate::GenerateOptions& options) {
  auto draft =
      llama::load(a.model_draft, target.backend(), {.n_ctx = target.n_ctx()});
  generate::SpeculativeOptions so;
  so.n_draft = a.n_draft;
  so.max_tokens = options.max_tokens;
  so.ignore_eos = options.ignore_eos;
  so.stop_tokens = options.stop_tokens;
  so.sampling = options.sampling;
  generate::StreamingDetokenizer detok(tok);
  generate::StopStrings stops(options.stop);
  auto print = [&](const std::string& text) {
    if (a.print_ids) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  auto on_token = [&](tokenizer::TokenId id) {
    print(stops.push(detok.push(id)));
    return !stops.stopped();
  };
  // Plain greedy keeps the argmax path; penalties or temperature > 0 take
  // the sampled rule (which is greedy with penalties at temperature 0).
  const generate::SamplingOptions& s = options.sampling;
  const bool plain_greedy = s.temperature <= 0.0f && s.repeat_penalty == 1.0f &&
                            s.presence_penalty == 0.0f &&
                            s.frequency_penalty == 0.0f;
  const auto t0 = std::chrono::steady_clock::now();
  const generate::SpeculativeResult r =
      plain_greedy
          ? generate::speculative_greedy(target, *draft, tok, ids, so, on_token)
          : generate::speculative_sample(target, *draft, tok, ids, so,
                                         on_token);
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  if (a.print_ids) {
    fmt::print("[{}]\n", fmt::join(r.tokens, ", "));
  } else {
    if (!stops.stopped()) {
      print(stops.push(detok.flush()));
      if (!stops.stopped()) print(stops.flush());
    }
    fmt::print("\n");
  }
  std::fflush(stdout);
  fmt::print(
      stderr,
      "\nnascent: speculative: {} tokens in {:.2f} ms ({:.2f} tokens "
      "per second, prompt included), {} of {} drafted tokens "
      "accepted ({:.1f}%), {} target passes\n",
      r.tokens.size(), ms, ms > 0 ? 1000.0 * double(r.tokens.size()) / ms : 0.0,
      r.n_accepted, r.n_drafted,
      r.n_drafted > 0 ? 100.0 * double(r.n_accepted) / double(r.n_drafted)
                      : 0.0,
      r.n_target_passes);
  return 0;
}

std::vector<tokenizer::TokenId> parse_ids(const std::string& text) {
  std::vector<tokenizer::TokenId> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    while (used < item.size() && item[used] == ' ') ++used;
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX) {
      throw ValueError(
          fmt::format("generate: --tokens: '{}' is not a token id", item));
    }
    ids.push_back(tokenizer::TokenId(v));
  }
  return ids;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void dump_logits(llama::Model& model,
                 const std::vector<tokenizer::TokenId>& ids,
                 const std::string& path) {
  const std::vector<float> logits =
      model.forward(ids, 0, llama::LogitsMode::all).to_vector<float>();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  // The host is little-endian (x86, ARM, wasm).
  out.write(reinterpret_cast<const char*>(logits.data()),
            std::streamsize(logits.size() * sizeof(float)));
  if (!out) throw IoError(fmt::format("{}: cannot write", path));
}

int run_generate(const GenerateArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = cli::load_model(a.model);
  tokenizer::Tokenizer tokenizer =
      tokenizer::Tokenizer::from_gguf(model->file().metadata());
  const double load_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();

  generate::GenerateOptions options = cli::generate_options(a.model);
  std::vector<tokenizer::TokenId> ids;
  if (a.chat) {
    if (!a.tokens.empty()) {
      throw ValueError("generate: --chat takes -p or -f, not --tokens");
    }
    std::string text = a.file.empty() ? a.prompt : read_file(a.file);
    if (!a.no_escape && a.file.empty()) text = cli::process_escapes(text);
    const generate::ChatTemplate tmpl =
        cli::load_chat_template(tokenizer, a.tmpl, "generate");
    generate::ChatTemplate::Inputs in;
    std::vector<generate::ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", text});
    in.messages = to_jinja(messages);
    in.add_generation_prompt = true;
    in.extra =
        cli::parse_template_kwargs(a.tmpl.kwargs, "--chat-template-kwargs");
    options.stop_tokens = tmpl.end_of_turn_tokens(tokenizer, in.extra);
    if (a.tmpl.verbose_prompt) {
      cli::print_stop_tokens(tokenizer, options.stop_tokens);
    }
    ids = cli::encode_chat_prompt(tokenizer,
                                  cli::render_chat(tmpl, in, "generate"),
                                  a.tmpl.verbose_prompt);
  } else if (!a.system.empty() || !a.tmpl.chat_template.empty() ||
             !a.tmpl.kwargs.empty()) {
    throw ValueError(
        "generate: --system-prompt, --chat-template and "
        "--chat-template-kwargs need --chat");
  } else if (!a.tokens.empty()) {
    ids = parse_ids(a.tokens);
  } else {
    std::string text = a.file.empty() ? a.prompt : read_file(a.file);
    if (!a.no_escape && a.file.empty()) text = cli::process_escapes(text);
    ids = tokenizer.encode(text, tokenizer.add_bos() && !a.no_bos, true);
    if (a.tmpl.verbose_prompt) {
      fmt::print(stderr, "prompt ({} tokens):\n{}\n[end of prompt]\n",
                 ids.size(), text);
    }
  }
  if (ids.empty()) {
    throw ValueError("generate: the prompt is empty (give -p, -f or --tokens)");
  }
  if (!a.dump_logits.empty()) {
    dump_logits(*model, ids, a.dump_logits);
    if (a.model.n_predict == 0) return 0;
  }

  if (!a.model_draft.empty()) {
    return run_speculative(a, *model, tokenizer, ids, options);
  }
  generate::TextGenerator gen(model, tokenizer, options);
  auto print = [&](std::string_view text) {
    if (!a.print_ids) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  const generate::GenerateResult r = gen.generate_tokens(ids, print);
  if (a.print_ids) {
    fmt::print("[{}]\n", fmt::join(r.tokens, ", "));
  } else {
    fmt::print("\n");
  }
  std::fflush(stdout);
  cli::print_timings(r, load_ms);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "generate", "continue a prompt with a LLaMA GGUF model (like llama-cli)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<GenerateArgs>();
      cli::add_model_options(sub, a->model);
      auto* p = sub.add_option("-p,--prompt", a->prompt, "the prompt");
      auto* f = sub.add_option("-f,--file", a->file,
                               "read the prompt from a file (verbatim)")
                    ->check(CLI::ExistingFile);
      auto* t = sub.add_option("--tokens", a->tokens,
                               "the prompt as token ids: 1,2,3 (no "
                               "tokenizer; for tests)");
      p->excludes(f)->excludes(t);
      f->excludes(t);
      sub.add_flag("--no-escape", a->no_escape,
                   "keep \\n, \\t, \\xHH... in -p as written");
      sub.add_flag("--no-bos", a->no_bos,
                   "do not add the BOS token the model asks for (with --chat "
                   "the template decides)");
      sub.add_option("--dump-logits", a->dump_logits,
                     "write the logits of every prompt position to this "
                     "file as raw little-endian f32 [n_tokens, n_vocab] "
                     "(with -n 0: only that)");
      sub.add_flag("--print-ids", a->print_ids,
                   "print the generated token ids as [id, ...] instead of "
                   "the text");
      sub.add_flag("--chat", a->chat,
                   "the prompt is a user message: render it in the chat "
                   "template and stop at its end of turn");
      sub.add_option("--system-prompt,--sys", a->system,
                     "a system message before it (with --chat)");
      cli::add_chat_template_options(sub, a->tmpl);
      sub.add_option("--model-draft", a->model_draft,
                     "a draft model for speculative decoding: the target's "
                     "greedy tokens (--temp 0) or samples of its "
                     "distribution, in fewer target passes")
          ->check(CLI::ExistingFile);
      sub.add_option("--draft", a->n_draft,
                     "tokens the draft proposes per round")
          ->capture_default_str()
          ->check(CLI::Range(1, 64));
      return [a] { return run_generate(*a); };
    });
