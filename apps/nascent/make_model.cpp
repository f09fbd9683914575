// `nascent make-model out.gguf`: a random-weight LLaMA GGUF file for tests
// and benchmarks (nascent/models/llama/random_model.h), e.g. a
// TinyLlama-1.1B-shaped one:
//   nascent make-model tiny.gguf --dim 2048 --layers 22 --heads 32
//       --kv-heads 4 --ffn 5632 --vocab ggml-vocab-llama-spm.gguf --type f16
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/io/file.h"
#include "nascent/models/llama/random_model.h"

namespace {

struct MakeModelArgs {
  std::string out;
  std::string type = "f32";
  int threads = 0;
  std::string chat_template_file;
  nascent::llama::RandomModelConfig config;
};

int make_model(MakeModelArgs& a) {
  using namespace nascent;
  auto type = quant_type_from_name(a.type);
  if (!type || *type == QuantType::q8_k) {
    throw ValueError(
        fmt::format("make-model: unknown weight type '{}'", a.type));
  }
  a.config.type = *type;
  if (!a.chat_template_file.empty()) {
    std::ifstream in(a.chat_template_file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
      throw IoError(
          fmt::format("make-model: cannot read {}", a.chat_template_file));
    }
    a.config.chat_template = ss.str();
  }
  if (a.threads > 0) cpu::set_num_threads(a.threads);
  auto start = std::chrono::steady_clock::now();
  llama::write_random_model(a.config, a.out);
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  fmt::print(stderr, "make-model: wrote {} ({}) in {:.2f} s\n", a.out,
             name(*type), s);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "make-model", "write a random-weight LLaMA GGUF file (tests, benchmarks)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<MakeModelArgs>();
      auto& c = a->config;
      sub.add_option("out", a->out, "the GGUF file to write")->required();
      sub.add_option("--dim", c.n_embd, "model width (default 64)");
      sub.add_option("--layers", c.n_layer, "blocks (default 2)");
      sub.add_option("--heads", c.n_head, "attention heads (default 4)");
      sub.add_option("--kv-heads", c.n_head_kv, "key/value heads (default 2)");
      sub.add_option("--ffn", c.n_ff, "feed-forward width (default 160)");
      sub.add_option("--vocab-size", c.n_vocab,
                     "tokens of the synthesised vocabulary (default 320)");
      sub.add_option("--vocab", c.vocab_file,
                     "copy the tokenizer from this GGUF file instead")
          ->check(CLI::ExistingFile);
      sub.add_option("--chat-template", a->chat_template_file,
                     "write this Jinja file as tokenizer.chat_template")
          ->check(CLI::ExistingFile);
      sub.add_option("--ctx", c.n_ctx, "context length (default 512)");
      sub.add_option("--rope-base", c.rope_freq_base,
                     "RoPE frequency base (default 10000)");
      sub.add_option("--eps", c.rms_eps, "RMSNorm epsilon (default 1e-5)");
      sub.add_flag("--tied", c.tied_output,
                   "no output.weight: the output is token_embd.weight");
      sub.add_option("--seed", c.seed, "random seed (default 1)");
      sub.add_option("--type", a->type,
                     "type of the 2-D weights: f32, f16, bf16, q8_0, q4_0, "
                     "q4_k... (default f32)");
      sub.add_option("-t,--threads", a->threads, "threads (default: all)")
          ->check(CLI::Range(1, 1024));
      return [a] { return make_model(*a); };
    });
