// `nascent perplexity`: a model's perplexity on a text file, as
// llama-perplexity computes and prints it (chunks of -c tokens, the second
// half of each scored; "[1]12.3456,[2]..." then "Final estimate: PPL = ...
// +/- ..."), so the two programs can be compared line for line.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "nascent/generate/perplexity.h"
#include "nascent/io/file.h"

namespace {

using namespace nascent;

struct Args {
  cli::ModelArgs model;
  std::string file;
  int64_t chunks = 0;
};

int run_perplexity(const Args& args) {
  const auto start = std::chrono::steady_clock::now();
  auto file = io::MappedFile::open(args.file);
  const auto bytes = file->bytes();
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()),
                              bytes.size());
  std::shared_ptr<llama::Model> model = cli::load_model(args.model);
  const tokenizer::Tokenizer tok =
      tokenizer::Tokenizer::from_gguf(model->file().metadata());
  generate::PerplexityOptions o;
  o.n_ctx = args.model.n_ctx;
  o.n_chunks = args.chunks;
  fmt::print(stderr, "perplexity: {} on {} ({} bytes), context {}\n",
             args.model.model, args.file, bytes.size(),
             o.n_ctx > 0 ? o.n_ctx : model->n_ctx());
  const generate::PerplexityResult r =
      generate::perplexity(*model, tok, text, o, [](int64_t chunk, double ppl) {
        fmt::print("[{}]{:.4f},", chunk, ppl);
        std::fflush(stdout);
      });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl,
             r.uncertainty);
  std::fflush(stdout);
  fmt::print(stderr, "perplexity: {} tokens, {} chunks, {} scored, {:.1f} s\n",
             r.tokens, r.chunks, r.scored, seconds);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "perplexity", "a model's perplexity on a text file (llama-perplexity)",
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<Args>();
      sub.add_option("-m,--model", args->model.model, "GGUF model")->required();
      sub.add_option("-f,--file", args->file, "text file")->required();
      sub.add_option("-c,--ctx-size", args->model.n_ctx,
                     "tokens per chunk (default: the model's context, at "
                     "most 4096)")
          ->check(CLI::Range(0, 1 << 20));
      sub.add_option("--chunks", args->chunks,
                     "chunks to score at most (default: all)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("-t,--threads", args->model.threads, "CPU threads")
          ->check(CLI::Range(1, 1024));
      sub.add_option("-d,--device", args->model.device,
                     "cpu, cpu:composed, cuda or cuda:N")
          ->capture_default_str();
      return [=] { return run_perplexity(*args); };
    });
