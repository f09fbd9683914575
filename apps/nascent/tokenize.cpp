// `nascent tokenize`: text to token ids with a GGUF file's tokenizer, with
// llama-tokenize's flags and output ([id, id, ...] with --ids, otherwise one
// "id -> 'piece'" line per token).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "nascent/core/error.h"
#include "nascent/generate/stream.h"
#include "nascent/io/file.h"
#include "nascent/tokenizer/tokenizer.h"

namespace {

struct TokenizeArgs {
  std::string model;
  std::string prompt;
  std::string file;
  bool stdin_input = false;
  bool ids = false;
  bool no_bos = false;
  bool no_parse_special = false;
  bool no_escape = false;
  bool show_count = false;
  CLI::Option* prompt_opt = nullptr;
  CLI::Option* file_opt = nullptr;
  CLI::Option* stdin_opt = nullptr;
};

std::string read_all(std::FILE* f) {
  std::string s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  return s;
}

int tokenize(const TokenizeArgs& a) {
  using namespace nascent;
  size_t sources =
      a.prompt_opt->count() + a.file_opt->count() + a.stdin_opt->count();
  if (sources != 1) {
    throw ValueError(
        "tokenize: give the text with one of -p/--prompt, "
        "-f/--file or --stdin");
  }
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf_file(a.model);
  std::string text;
  if (a.file_opt->count()) {
    std::ifstream in(a.file, std::ios::binary);
    if (!in) throw IoError(fmt::format("{}: cannot read", a.file));
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else if (a.stdin_input) {
    text = read_all(stdin);
  } else {
    text = a.prompt;
  }
  if (!a.no_escape) text = nascent::cli::process_escapes(text);

  // As llama-tokenize: BOS (and EOS) when the model adds them, unless
  // --no-bos.
  bool add_special = tok.add_bos() && !a.no_bos;
  std::vector<tokenizer::TokenId> ids =
      tok.encode(text, add_special, !a.no_parse_special);
  if (a.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      line += fmt::format("{}{}", i ? ", " : "", ids[i]);
    }
    fmt::print("{}]\n", line);
  } else {
    for (tokenizer::TokenId id : ids) {
      std::string piece = tok.token_to_piece(id, true);
      std::string shown = generate::sanitize_utf8(piece);
      fmt::print("{:6} -> '{}'{}\n", id, shown,
                 shown == piece ? "" : " (utf-8 decode failure)");
    }
  }
  if (a.show_count) fmt::print("Total number of tokens: {}\n", ids.size());
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "tokenize", "print the token ids of a text (like llama-tokenize)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<TokenizeArgs>();
      sub.add_option("-m,--model", a->model, "GGUF file with a tokenizer")
          ->required()
          ->check(CLI::ExistingFile);
      a->prompt_opt = sub.add_option("-p,--prompt", a->prompt, "the text");
      a->file_opt = sub.add_option("-f,--file", a->file,
                                   "read the text from a "
                                   "file (all of it, verbatim)")
                        ->check(CLI::ExistingFile);
      a->stdin_opt =
          sub.add_flag("--stdin", a->stdin_input, "read the text from stdin");
      a->prompt_opt->excludes(a->file_opt)->excludes(a->stdin_opt);
      a->file_opt->excludes(a->stdin_opt);
      sub.add_flag("--ids", a->ids, "print only the ids, as [id, id, ...]");
      sub.add_flag("--no-bos", a->no_bos,
                   "do not add the BOS token the model asks for");
      sub.add_flag("--no-parse-special", a->no_parse_special,
                   "spell out control tokens written in the text");
      sub.add_flag("--no-escape", a->no_escape,
                   "keep \\n, \\t, \\xHH... as written");
      sub.add_flag("--show-count", a->show_count, "print the token count");
      return [a] { return tokenize(*a); };
    });
