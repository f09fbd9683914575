#include "apps/nascent/llama_common.h"

#include <random>

#include <fmt/format.h>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"

namespace nascent::cli {

void add_model_options(CLI::App& sub, ModelArgs& a) {
  sub.add_option("-m,--model", a.model, "GGUF model file")
      ->required()
      ->check(CLI::ExistingFile);
  sub.add_option("-c,--ctx-size", a.n_ctx,
                 "context size (0: the model's, at most 4096)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-t,--threads", a.threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-d,--device", a.device,
                 "where to run: cpu, cuda or cuda:N (cpu:composed: the CPU "
                 "without its fused transformer kernels)")
      ->capture_default_str();
  sub.add_option("-n,--n-predict", a.n_predict,
                 "tokens to generate (-1: until end of text or full context)");
  sub.add_option("--temp", a.temp, "temperature (0: greedy)");
  sub.add_option("--top-k", a.top_k, "top-k sampling (0: off)");
  sub.add_option("--top-p", a.top_p, "top-p sampling (1: off)");
  sub.add_option("--min-p", a.min_p, "min-p sampling (0: off)");
  sub.add_option("--repeat-penalty", a.repeat_penalty,
                 "penalize repeated tokens (1: off)");
  sub.add_option("--repeat-last-n", a.repeat_last_n,
                 "tokens the penalties look back on (-1: all)");
  sub.add_option("--presence-penalty", a.presence_penalty,
                 "presence penalty (0: off)");
  sub.add_option("--frequency-penalty", a.frequency_penalty,
                 "frequency penalty (0: off)");
  sub.add_option("-s,--seed", a.seed, "sampling seed (-1: random)");
  sub.add_option("-r,--reverse-prompt,--stop", a.stops,
                 "stop generating at this text (repeatable)");
  sub.add_flag("--ignore-eos", a.ignore_eos,
               "keep generating past end-of-text tokens");
}

generate::GenerateOptions generate_options(const ModelArgs& a) {
  generate::GenerateOptions o;
  generate::SamplingOptions& s = o.sampling;
  s.temperature = a.temp;
  s.top_k = a.top_k;
  s.top_p = a.top_p;
  s.min_p = a.min_p;
  s.repeat_penalty = a.repeat_penalty;
  s.repeat_last_n = a.repeat_last_n;
  s.presence_penalty = a.presence_penalty;
  s.frequency_penalty = a.frequency_penalty;
  s.seed = a.seed >= 0 ? uint64_t(a.seed) : uint64_t(std::random_device{}());
  o.max_tokens = a.n_predict;
  for (const std::string& stop : a.stops) {
    o.stop.push_back(process_escapes(stop));
  }
  o.ignore_eos = a.ignore_eos;
  return o;
}

std::shared_ptr<llama::Model> load_model(const ModelArgs& a) {
  if (a.threads > 0) cpu::set_num_threads(a.threads);
  static std::unique_ptr<Backend> backend;
  backend = make_backend(a.device);
  llama::LoadOptions options;
  options.n_ctx = a.n_ctx;
  options.n_seq = a.n_seq;
  return llama::load(a.model, *backend, options);
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string process_escapes(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    const char c = in[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case '\'':
      case '"':
      case '\\':
        out += c;
        break;
      case 'x':
        if (i + 2 < in.size() && hex_value(in[i + 1]) >= 0 &&
            hex_value(in[i + 2]) >= 0) {
          out += char(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

void print_timings(const generate::GenerateResult& r, double load_ms) {
  auto line = [](const char* what, double ms, int64_t n, const char* unit) {
    fmt::print(stderr,
               "nascent: {:<12} {:10.2f} ms / {:5} {} ({:8.2f} ms per token, "
               "{:8.2f} tokens per second)\n",
               what, ms, n, unit, n > 0 ? ms / double(n) : 0.0,
               ms > 0 ? 1000.0 * double(n) / ms : 0.0);
  };
  fmt::print(stderr, "\nnascent: {:<12} {:10.2f} ms\n", "load time", load_ms);
  line("prompt eval", r.prompt_ms, r.n_prompt_eval, "tokens");
  line("eval", r.generation_ms, r.n_generation_eval, "runs  ");
}

}  // namespace nascent::cli
