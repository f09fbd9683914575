// `nascent bench -m model.gguf -p 512 -n 128 -t 2`: llama-bench's job and
// table. ppN times one batch of N prompt tokens from an empty cache, tgN
// times N single-token forwards from an empty cache (random token ids, no
// sampling), each over -r repetitions after a warm-up; t/s is the mean of
// the repetitions' rates ± their standard deviation. Also printed: load
// time, time to first token (load plus a 1-token prompt) and peak RSS.
// --device cpu,cuda gives each device its rows (threads apply to the CPU;
// another device runs once, under the first thread count). Each forward
// ends with its logits read back, so a device's time includes its wait.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/nascent/command.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/core/error.h"
#include "nascent/models/llama/model.h"
#include "nascent/models/llama/quantize.h"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::vector<std::string> models;
  std::vector<int> prompts = {512};
  std::vector<int> gens = {128};
  std::vector<int> threads;
  std::vector<std::string> devices = {"cpu"};
  int reps = 5;
  bool json = false;
};

struct Result {
  std::string model, desc, backend;
  uint64_t size = 0, params = 0;
  int threads = 0, n_prompt = 0, n_gen = 0;
  std::vector<double> rates;
  double load_ms = 0, ttft_ms = 0;
  double mean() const {
    double s = 0;
    for (double r : rates) s += r;
    return rates.empty() ? 0 : s / double(rates.size());
  }
  double stddev() const {
    if (rates.size() < 2) return 0;
    double m = mean(), s = 0;
    for (double r : rates) s += (r - m) * (r - m);
    return std::sqrt(s / double(rates.size() - 1));
  }
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

uint64_t peak_rss_bytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return uint64_t(u.ru_maxrss) * 1024;  // Linux reports KiB.
}

// llama-bench's description: architecture, size class, file type.
std::string describe(const nascent::llama::Model& m, uint64_t params) {
  const auto& meta = m.file().metadata();
  std::string ftype = "?";
  if (auto t = meta.find_int("general.file_type")) {
    ftype = nascent::llama::name(nascent::llama::FileType(uint32_t(*t)));
    if (ftype == "unknown") ftype = fmt::format("ftype {}", *t);
  }
  std::string n = params >= 1000000000
                      ? fmt::format("{:.1f}B", double(params) / 1e9)
                      : fmt::format("{:.0f}M", double(params) / 1e6);
  return fmt::format("{} {} {}", m.config().arch, n, ftype);
}

std::vector<int32_t> random_tokens(int n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(rng() % uint32_t(n_vocab));
  return t;
}

// The logits' bytes on the host: on a device backend, the wait for the
// forward (on the CPU, nothing to wait for).
void read_back(const nascent::Tensor& logits) {
  logits.backend().materialize(logits);
}

void run_prompt(nascent::llama::Model& m, const std::vector<int32_t>& toks) {
  m.reset();
  read_back(m.forward(toks, 0));
}

void run_gen(nascent::llama::Model& m, const std::vector<int32_t>& toks) {
  m.reset();
  for (size_t i = 0; i < toks.size(); ++i) {
    read_back(m.forward(std::span<const int32_t>(&toks[i], 1), int64_t(i)));
  }
}

std::vector<Result> bench_model(const BenchArgs& a, const std::string& path,
                                nascent::Backend& backend, int threads) {
  using namespace nascent;
  cpu::set_num_threads(threads);
  int ctx = 1;
  for (int p : a.prompts) ctx = std::max(ctx, p);
  for (int n : a.gens) ctx = std::max(ctx, n);
  auto start = Clock::now();
  auto model = llama::load(path, backend, {.n_ctx = ctx});
  double load_ms = ms_since(start);
  std::vector<int32_t> one = {1};
  read_back(model->forward(one, 0));
  double ttft_ms = ms_since(start);
  uint64_t size = 0, params = 0;
  for (const auto& t : model->file().tensors()) {
    size += t.size;
    params += uint64_t(t.numel());
  }
  std::vector<Result> out;
  auto measure = [&](int n_prompt, int n_gen) {
    Result r;
    r.model = path;
    r.desc = describe(*model, params);
    r.backend = backend.name();
    r.size = size;
    r.params = params;
    r.threads = threads;
    r.n_prompt = n_prompt;
    r.n_gen = n_gen;
    r.load_ms = load_ms;
    r.ttft_ms = ttft_ms;
    int64_t vocab = model->config().n_vocab;
    int n = n_prompt > 0 ? n_prompt : n_gen;
    // Warm-up (llama-bench's): one run of the batch, one token.
    if (n_prompt > 0) run_prompt(*model, random_tokens(n, vocab, 0));
    run_gen(*model, random_tokens(1, vocab, 0));
    for (int i = 0; i < a.reps; ++i) {
      auto toks = random_tokens(n, vocab, uint32_t(i + 1));
      auto t0 = Clock::now();
      if (n_prompt > 0) {
        run_prompt(*model, toks);
      } else {
        run_gen(*model, toks);
      }
      r.rates.push_back(1e3 * n / ms_since(t0));
    }
    out.push_back(std::move(r));
  };
  for (int p : a.prompts) {
    if (p > 0) measure(p, 0);
  }
  for (int g : a.gens) {
    if (g > 0) measure(0, g);
  }
  return out;
}

std::string mib_or_gib(uint64_t bytes) {
  double mib = double(bytes) / (1024.0 * 1024.0);
  return mib >= 1024 ? fmt::format("{:.2f} GiB", mib / 1024)
                     : fmt::format("{:.2f} MiB", mib);
}

std::string test_name(const Result& r) {
  return r.n_prompt > 0 ? fmt::format("pp{}", r.n_prompt)
                        : fmt::format("tg{}", r.n_gen);
}

void print_table(const std::vector<Result>& rs) {
  fmt::print("| {:<24} | {:>10} | {:>8} | {:<12} | {:>7} | {:>6} | {:>16} |\n",
             "model", "size", "params", "backend", "threads", "test", "t/s");
  fmt::print(
      "| {:-<24} | {:->10} | {:->8} | {:-<12} | {:->7} | {:->6} | "
      "{:->16} |\n",
      "", "", "", "", "", "", "");
  for (const Result& r : rs) {
    fmt::print(
        "| {:<24} | {:>10} | {:>8} | {:<12} | {:>7} | {:>6} | {:>16} |\n",
        r.desc, mib_or_gib(r.size),
        fmt::format("{:.2f} B", double(r.params) / 1e9), r.backend, r.threads,
        test_name(r), fmt::format("{:.2f} ± {:.2f}", r.mean(), r.stddev()));
  }
}

void print_json(const std::vector<Result>& rs, uint64_t rss) {
  nlohmann::json out = nlohmann::json::array();
  for (const Result& r : rs) {
    out.push_back({{"model_filename", r.model},
                   {"model_type", r.desc},
                   {"model_size", r.size},
                   {"model_n_params", r.params},
                   {"backend", r.backend},
                   {"n_threads", r.threads},
                   {"n_prompt", r.n_prompt},
                   {"n_gen", r.n_gen},
                   {"test", test_name(r)},
                   {"avg_ts", r.mean()},
                   {"stddev_ts", r.stddev()},
                   {"samples_ts", r.rates},
                   {"load_ms", r.load_ms},
                   {"ttft_ms", r.ttft_ms},
                   {"peak_rss_bytes", rss}});
  }
  fmt::print("{}\n", out.dump(2));
}

int bench(BenchArgs a) {
  using namespace nascent;
  if (a.threads.empty()) a.threads.push_back(cpu::num_threads());
  for (int t : a.threads) {
    if (t < 1) throw ValueError(fmt::format("bench: -t {} is not >= 1", t));
  }
  for (int v : a.prompts) {
    if (v < 0) throw ValueError(fmt::format("bench: -p {} is negative", v));
  }
  for (int v : a.gens) {
    if (v < 0) throw ValueError(fmt::format("bench: -n {} is negative", v));
  }
  std::vector<Result> all;
  for (const std::string& d : a.devices) {
    std::unique_ptr<Backend> backend = make_backend(d);
    const bool on_cpu = dynamic_cast<cpu::Backend*>(backend.get()) != nullptr;
    for (const std::string& m : a.models) {
      for (int t : a.threads) {
        auto rs = bench_model(a, m, *backend, t);
        all.insert(all.end(), rs.begin(), rs.end());
        if (!on_cpu) break;
      }
    }
  }
  uint64_t rss = peak_rss_bytes();
  if (a.json) {
    print_json(all, rss);
    return 0;
  }
  print_table(all);
  for (const Result& r : all) {
    if (&r == &all.front() || r.model != (&r - 1)->model ||
        r.threads != (&r - 1)->threads || r.backend != (&r - 1)->backend) {
      fmt::print(
          "\n{} ({}, t={}): load {:.1f} ms, first token of a 1-token "
          "prompt {:.1f} ms after the load began",
          r.model, r.backend, r.threads, r.load_ms, r.ttft_ms);
    }
  }
  fmt::print("\npeak RSS {}\n", mib_or_gib(rss));
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "bench", "prompt and generation tokens/s of a GGUF model (llama-bench)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<BenchArgs>();
      sub.add_option("-m,--model", a->models, "GGUF model file (repeatable)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("-p,--n-prompt", a->prompts,
                     "prompt tokens, comma-separated (default 512; 0: none)")
          ->delimiter(',');
      sub.add_option("-n,--n-gen", a->gens,
                     "generated tokens, comma-separated (default 128; 0: "
                     "none)")
          ->delimiter(',');
      sub.add_option("-t,--threads", a->threads,
                     "threads, comma-separated (default: all)")
          ->delimiter(',');
      sub.add_option("-d,--device", a->devices,
                     "devices, comma-separated: cpu, cpu:composed, cuda, "
                     "cuda:N (default cpu)")
          ->delimiter(',');
      sub.add_option("-r,--repetitions", a->reps, "repetitions (default 5)")
          ->check(CLI::Range(1, 1000));
      sub.add_flag("--json", a->json, "print JSON instead of the table");
      return [a] { return bench(*a); };
    });
