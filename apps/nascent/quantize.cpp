// `nascent quantize in.gguf out.gguf TYPE`: llama-quantize's job (see
// nascent/models/llama/quantize.h), with its type names and per-tensor mixes.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/models/llama/quantize.h"

namespace {

struct QuantizeArgs {
  std::string in;
  std::string out;
  std::string type;
  std::string output_type;
  std::string token_embedding_type;
  int threads = 0;
  bool pure = false;
  bool allow_requantize = false;
  bool quiet = false;
};

nascent::QuantType tensor_type(const std::string& s, const char* option) {
  auto t = nascent::quant_type_from_name(s);
  if (!t || *t == nascent::QuantType::q8_k) {
    throw nascent::ValueError(
        fmt::format("quantize: {} '{}' is not a tensor type", option, s));
  }
  return *t;
}

double mib(uint64_t bytes) {
  return double(bytes) / (1024.0 * 1024.0);
}

int quantize(const QuantizeArgs& a) {
  using namespace nascent;
  auto type = llama::file_type_from_name(a.type);
  if (!type) {
    throw ValueError(fmt::format("quantize: unknown type '{}' (one of: {})",
                                 a.type, llama::file_type_names()));
  }
  llama::QuantizeOptions o;
  o.type = *type;
  o.pure = a.pure;
  o.allow_requantize = a.allow_requantize;
  if (!a.output_type.empty()) {
    o.output_type = tensor_type(a.output_type, "--output-tensor-type");
  }
  if (!a.token_embedding_type.empty()) {
    o.token_embedding_type =
        tensor_type(a.token_embedding_type, "--token-embedding-type");
  }
  if (a.threads > 0) cpu::set_num_threads(a.threads);
  auto start = std::chrono::steady_clock::now();
  llama::QuantizeResult r = llama::quantize_model(a.in, a.out, o);
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!a.quiet) {
    for (const auto& p : r.plan) {
      fmt::print("{:>36} {:>6} -> {:<6}{}\n", p.name, name(p.from), name(p.to),
                 p.fallback ? " (fallback)" : "");
    }
  }
  fmt::print("quantize: {} -> {} as {}: {:.2f} MiB -> {:.2f} MiB in {:.2f} s\n",
             a.in, a.out, name(*type), mib(r.bytes_in), mib(r.bytes_out), s);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "quantize", "quantize a GGUF model (llama-quantize's types and mixes)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<QuantizeArgs>();
      sub.add_option("in", a->in, "the f32/f16/bf16 GGUF model")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("out", a->out, "the GGUF file to write")->required();
      sub.add_option("type", a->type,
                     "q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, "
                     "q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, f16, "
                     "bf16, f32")
          ->required();
      sub.add_option("-t,--threads", a->threads, "threads (default: all)")
          ->check(CLI::Range(1, 1024));
      sub.add_flag("--pure", a->pure,
                   "every quantized tensor in the base type (no mix)");
      sub.add_flag("--allow-requantize", a->allow_requantize,
                   "quantize tensors that are already quantized");
      sub.add_option("--output-tensor-type", a->output_type,
                     "type of output.weight");
      sub.add_option("--token-embedding-type", a->token_embedding_type,
                     "type of token_embd.weight");
      sub.add_flag("-q,--quiet", a->quiet, "no per-tensor lines");
      return [a] { return quantize(*a); };
    });
