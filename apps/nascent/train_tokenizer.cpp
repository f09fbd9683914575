// `nascent train-tokenizer --corpus FILE... -o vocab.gguf`: learns a BPE
// vocabulary (nascent/tokenizer/trainer.h) and writes it as a GGUF file of
// tokenizer.* keys, which `nascent tokenize -m` reads and `nascent make-model
// --vocab` puts into a model llama.cpp loads. Each file is one text, or
// several: a line holding only "%" separates texts (the fortune-file format).
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/core/error.h"
#include "nascent/io/file.h"
#include "nascent/io/gguf_writer.h"
#include "nascent/tokenizer/trainer.h"

namespace {

struct TrainTokenizerArgs {
  std::vector<std::string> corpus;
  std::string out;
  std::string kind = "spm-bpe";
  nascent::tokenizer::TrainerOptions options;
};

// The texts of one file: split at "%" lines, empty ones dropped.
void read_texts(const std::string& path, std::vector<std::string>& texts) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) {
    throw nascent::IoError(
        fmt::format("train-tokenizer: cannot read {}", path));
  }
  std::string all = ss.str();
  std::string text;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    end = end == std::string::npos ? all.size() : end + 1;
    std::string_view line(all.data() + pos, end - pos);
    if (line == "%\n" || line == "%") {
      if (!text.empty()) texts.push_back(std::move(text));
      text.clear();
    } else {
      text.append(line);
    }
    pos = end;
  }
  if (!text.empty()) texts.push_back(std::move(text));
}

int train_tokenizer_command(TrainTokenizerArgs& a) {
  using namespace nascent;
  a.options.kind = tokenizer::parse_trainer_kind(a.kind);
  std::vector<std::string> texts;
  for (const std::string& path : a.corpus) read_texts(path, texts);
  std::vector<std::string_view> views(texts.begin(), texts.end());
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();

  auto start = std::chrono::steady_clock::now();
  gguf::Writer writer;
  writer.metadata() = tokenizer::train_tokenizer(views, a.options);
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  writer.metadata().set("general.name", gguf::Value(fmt::format(
                                            "nascent {} vocabulary", a.kind)));
  writer.write(a.out);
  fmt::print(stderr,
             "train-tokenizer: {} {} tokens from {} texts ({:.2f} MB) in "
             "{:.2f} s, wrote {}\n",
             a.options.vocab_size, a.kind, texts.size(), double(bytes) / 1e6, s,
             a.out);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "train-tokenizer",
    "learn a BPE vocabulary from text files, written as a GGUF file",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<TrainTokenizerArgs>();
      auto& o = a->options;
      sub.add_option("--corpus", a->corpus,
                     "text files (a line holding only % separates texts)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("-o,--out", a->out, "the GGUF file to write")->required();
      sub.add_option("--kind", a->kind,
                     "spm-bpe (SentencePiece-style, byte fallback) or "
                     "byte-bpe (GPT-2 style) (default spm-bpe)");
      sub.add_option("--vocab-size", o.vocab_size,
                     "tokens in all, specials and bytes included (default "
                     "4096)");
      sub.add_option("--min-pair-count", o.min_pair_count,
                     "never merge a pair seen fewer times (default 2)");
      sub.add_option("--coverage", o.character_coverage,
                     "spm-bpe: share of the characters that become tokens "
                     "(default 0.9995)");
      sub.add_option("--pre", o.pre_tokenizer,
                     "byte-bpe: pre-tokenizer, gpt-2, llama-bpe or qwen2 "
                     "(default gpt-2)");
      sub.add_flag(
          "--no-bos", [o = &o](int64_t) { o->add_bos = false; },
          "the tokenizer adds no BOS token");
      sub.add_flag("--add-eos", o.add_eos, "the tokenizer adds an EOS token");
      return [a] { return train_tokenizer_command(*a); };
    });
