// What `generate` and `chat` share: llama.cpp's sampling and model flags,
// loading with a thread count, escapes and the timing lines.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "nascent/generate/generator.h"
#include "nascent/models/llama/model.h"

namespace nascent::cli {

struct ModelArgs {
  std::string model;
  int64_t n_ctx = 0;  // 0: the model's (at most 4096).
  int32_t n_seq = 1;  // KV-cache slots (serve's -np; not a flag here).
  int threads = 0;    // 0: the CPU backend's default.
  std::string device = "cpu";
  int32_t n_predict = -1;
  float temp = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int64_t seed = -1;  // -1: random.
  std::vector<std::string> stops;
  bool ignore_eos = false;
};

// -m, -c, -t, -d, -n, --temp, --top-k, --top-p, --min-p, --repeat-penalty,
// --repeat-last-n, --presence-penalty, --frequency-penalty, -s, -r,
// --ignore-eos.
void add_model_options(CLI::App& sub, ModelArgs& a);
generate::GenerateOptions generate_options(const ModelArgs& a);
// Sets the thread count, loads the model on a backend for a.device (which
// lives until the program ends).
std::shared_ptr<llama::Model> load_model(const ModelArgs& a);

// llama.cpp's escapes: \n \r \t \' \" \\ and \xHH; others stay as written.
std::string process_escapes(const std::string& in);

// The timing lines llama.cpp prints, to stderr.
void print_timings(const generate::GenerateResult& r, double load_ms);

}  // namespace nascent::cli
