// `nascent train-lm`: trains a small LLaMA on a text corpus (by default the
// English prose of Debian's fortunes packages) with a tokenizer it learns
// first, printing a progress bar (loss, tokens/s, learning rate, ETA) and the
// held-out loss and perplexity every --eval-every steps. Writes a resumable
// checkpoint, a loss curve (.loss.svg), the held-out text (.heldout.txt, for
// `nascent perplexity`) and, at the end, samples of generated text.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/progress.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/core/ops.h"
#include "nascent/data/text.h"
#include "nascent/generate/generator.h"
#include "nascent/io/file.h"
#include "nascent/models/llama/lm_trainer.h"
#include "nascent/tokenizer/trainer.h"
#include "nascent/train/loss_curve.h"

namespace {

using namespace nascent;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Args {
  llama::LmOptions options;
  std::vector<std::string> corpus;
  std::string tokenizer = "spm-bpe";
  int64_t heldout_every = 20;
  int64_t eval_every = 100;
  int64_t eval_windows = 64;
  int64_t save_every = 0;
  int64_t stop_at = 0;
  int64_t samples = 3;
  int threads = 0;
  std::string device = "cpu";
  std::string output = "lm.safetensors";
  std::string resume;
  bool steps_given = false;
};

std::string stem(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".safetensors" ? path.substr(0, path.size() - ext.size())
                               : path;
}

std::string clock_text(double seconds) {
  const int64_t s = int64_t(std::max(0.0, seconds) + 0.5);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

// The token stream of some documents: BOS, the text, EOS for each.
std::vector<int32_t> token_stream(const tokenizer::Tokenizer& tok,
                                  const std::vector<std::string>& docs) {
  std::vector<int32_t> out;
  for (const std::string& d : docs) {
    out.push_back(tok.bos());
    for (int32_t id : tok.encode(d, false, false)) out.push_back(id);
    out.push_back(tok.eos());
  }
  return out;
}

std::string join(const std::vector<std::string>& docs) {
  std::string s;
  for (const std::string& d : docs) s += d + "\n\n";
  return s;
}

void write_text(const std::string& path, const std::string& text) {
  io::AtomicFileWriter w(path);
  w.write(std::as_bytes(std::span(text.data(), text.size())));
  w.commit();
}

// Writes the model as a temporary f32 GGUF and samples from it as a user of
// the exported file would (nascent generate).
void print_samples(llama::LmTrainer& t, const std::string& out_stem,
                   int64_t count) {
  if (count <= 0) return;
  const std::string path = out_stem + ".sample.gguf";
  llama::export_gguf(t.model(), t.tokenizer(), QuantType::f32, path);
  std::unique_ptr<Backend> cpu = make_backend("cpu");
  auto model = llama::load(path, *cpu);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf_file(path);
  generate::GenerateOptions o;
  o.max_tokens = 64;
  o.sampling.temperature = 0.8f;
  o.sampling.top_p = 0.95f;
  for (int64_t i = 0; i < count; ++i) {
    o.sampling.seed = uint64_t(i + 1);
    generate::TextGenerator gen(model, tok, o);
    const std::string text = gen.generate("").text;
    fmt::print("sample {}: {}\n", i + 1, text);
  }
  std::filesystem::remove(path);
}

// What a run's checkpoint keeps for its continuation besides the tensors.
struct RunState {
  std::vector<std::string> corpus;
  int64_t heldout_every = 20;
  int64_t eval_every = 100;
  int64_t eval_windows = 64;
  train::LossCurve curve;
};

RunState read_run_state(const std::string& path) {
  const json state = llama::LmTrainer::checkpoint_state(path);
  RunState r;
  try {
    r.corpus = state.at("corpus").get<std::vector<std::string>>();
    r.heldout_every = state.at("heldout_every").get<int64_t>();
    r.eval_every = state.at("eval_every").get<int64_t>();
    r.eval_windows = state.at("eval_windows").get<int64_t>();
    if (r.heldout_every < 2 || r.eval_every < 0 || r.eval_windows < 1) {
      throw FormatError(fmt::format(
          "{}: the run's held-out split (one in {}) or evaluation settings "
          "(every {} steps, {} windows) are out of range",
          path, r.heldout_every, r.eval_every, r.eval_windows));
    }
    const json& h = state.at("history");
    for (const json& p : h.at("train")) {
      r.curve.train.emplace_back(p.at(0).get<double>(), p.at(1).get<double>());
    }
    for (const json& p : h.at("validation")) {
      r.curve.validation.emplace_back(p.at(0).get<double>(),
                                      p.at(1).get<double>());
    }
  } catch (const json::exception& e) {
    throw FormatError(
        fmt::format("{}: the run's state (corpus, held-out split, loss "
                    "history) is malformed: {}",
                    path, e.what()));
  }
  return r;
}

int train_lm(Args args) {
  if (args.threads > 0) cpu::set_num_threads(args.threads);
  const auto start = Clock::now();
  std::unique_ptr<Backend> device = make_backend(args.device);
  llama::LmOptions& o = args.options;
  gguf::Metadata tok_keys;
  if (!args.resume.empty()) {
    llama::LmOptions saved = llama::LmTrainer::checkpoint_options(args.resume);
    if (args.steps_given) saved.steps = std::max(saved.steps, o.steps);
    o = saved;
    tok_keys = llama::LmTrainer::checkpoint_tokenizer(args.resume);
  }
  // The corpus: given, the one a resumed run used, or the default.
  std::vector<std::string> files = args.corpus;
  train::LossCurve curve;
  if (!args.resume.empty()) {
    RunState saved = read_run_state(args.resume);
    if (files.empty()) files = saved.corpus;
    // The run goes on as it was set up; only its length may change.
    args.heldout_every = saved.heldout_every;
    args.eval_every = saved.eval_every;
    args.eval_windows = saved.eval_windows;
    curve = std::move(saved.curve);
  }
  if (files.empty()) files = data::default_corpus_files();
  data::TextSplit split =
      data::split_documents(data::read_documents(files), args.heldout_every);
  size_t train_bytes = 0;
  for (const std::string& d : split.train) train_bytes += d.size();
  fmt::print(
      "corpus: {} files, {} documents ({:.2f} MB) for training, {} "
      "held out\n",
      files.size(), split.train.size(), double(train_bytes) / 1e6,
      split.heldout.size());

  if (args.resume.empty()) {
    const auto tok_start = Clock::now();
    tokenizer::TrainerOptions to;
    to.kind = tokenizer::parse_trainer_kind(args.tokenizer);
    to.vocab_size = o.n_vocab;
    std::vector<std::string_view> texts(split.train.begin(), split.train.end());
    tok_keys = tokenizer::train_tokenizer(texts, to);
    fmt::print("tokenizer: {} with {} tokens ({:.1f} s)\n", args.tokenizer,
               o.n_vocab, seconds_since(tok_start));
  }
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(tok_keys);
  const std::vector<int32_t> train_ids = token_stream(tok, split.train);
  const std::vector<int32_t> heldout_ids = token_stream(tok, split.heldout);

  llama::LmTrainer trainer(o, *device, tok_keys);
  if (!args.resume.empty()) trainer.load(args.resume);
  const std::string out_stem = stem(args.output);
  write_text(out_stem + ".heldout.txt", join(split.heldout));
  const int64_t tokens_per_step = o.train.batch_size * o.seq_len * o.grad_accum;
  fmt::print(
      "nascent train-lm: {} ({} parameters), {} lr {} (warm-up {}, {}), "
      "batch {} x {} tokens x {} accumulated, {} steps ({:.1f} epochs of {} "
      "tokens), seed {}, {}\n",
      trainer.model().describe(), trainer.model().num_parameters(),
      o.train.optimizer, o.train.lr, o.train.warmup_steps, o.train.schedule,
      o.train.batch_size, o.seq_len, o.grad_accum, o.steps,
      double(o.steps * tokens_per_step) / double(train_ids.size()),
      train_ids.size(), o.train.seed, describe_backend(*device));
  if (!args.resume.empty()) {
    fmt::print("resumed from {} at step {}\n", args.resume, trainer.steps());
  }
  std::fflush(stdout);

  curve.title = fmt::format("nascent train-lm: {}", trainer.model().describe());
  auto save = [&] {
    json history = {{"train", json::array()}, {"validation", json::array()}};
    for (auto [s, l] : curve.train) history["train"].push_back({s, l});
    for (auto [s, l] : curve.validation)
      history["validation"].push_back({s, l});
    json extra = {{"history", history},
                  {"corpus", files},
                  {"heldout_every", args.heldout_every},
                  {"eval_every", args.eval_every},
                  {"eval_windows", args.eval_windows}};
    trainer.save(args.output, extra);
    train::write_loss_curve(out_stem + ".loss.svg", curve);
  };
  auto evaluate = [&] {
    const auto t = Clock::now();
    const double loss = trainer.evaluate(heldout_ids, args.eval_windows);
    curve.validation.emplace_back(double(trainer.steps()), loss);
    return std::make_pair(loss, seconds_since(t));
  };

  cli::ProgressLine progress(o.steps, 24);
  const int64_t sync_every = args.device == "cpu" ? 1 : 10;
  const auto train_start = Clock::now();
  const int64_t first_step = trainer.steps();
  Tensor pending;
  int64_t pending_count = 0;
  double last_loss = NAN;
  const int64_t last_step =
      args.stop_at > 0 ? std::min(args.stop_at, o.steps) : o.steps;
  while (trainer.steps() < last_step) {
    const double lr = trainer.lr_at(trainer.steps());
    llama::LmStep s = trainer.step(train_ids);
    pending = pending.defined() ? cat({pending, s.loss.reshape({1})}, 0)
                                : s.loss.reshape({1});
    ++pending_count;
    const int64_t step = trainer.steps();
    const bool eval_now = args.eval_every > 0 && step % args.eval_every == 0;
    if (pending_count % sync_every == 0 || eval_now || step == last_step) {
      const std::vector<float> losses = pending.to_vector<float>();
      for (size_t i = 0; i < losses.size(); ++i) {
        curve.train.emplace_back(
            double(step - int64_t(losses.size()) + 1 + int64_t(i)),
            double(losses[i]));
      }
      last_loss = losses.back();
      pending = Tensor();
      const double elapsed = seconds_since(train_start);
      const double done = double(step - first_step);
      progress.update(
          step, fmt::format("step {}/{} ", step, o.steps),
          fmt::format(" loss {:.4f} {:.0f} tok/s lr {:.2e} ETA {}", last_loss,
                      done * double(tokens_per_step) / elapsed, lr,
                      clock_text(elapsed / done * double(o.steps - step))));
    }
    if (eval_now || step == o.steps) {
      auto [loss, secs] = evaluate();
      progress.clear();
      fmt::print(
          "step {}/{}: training loss {:.4f}, held-out loss {:.4f}, perplexity "
          "{:.2f} ({:.1f} s)\n",
          step, o.steps, last_loss, loss, std::exp(loss), secs);
      std::fflush(stdout);
    }
    if ((args.save_every > 0 && step % args.save_every == 0) ||
        step == last_step) {
      save();
    }
  }
  if (trainer.steps() == first_step) save();  // Nothing left to run.
  const double train_seconds = seconds_since(train_start);
  fmt::print(
      "done in {:.1f} s ({:.1f} s training, {:.0f} tokens/s); checkpoint {}, "
      "loss curve {}.loss.svg, held-out text {}.heldout.txt\n",
      seconds_since(start), train_seconds,
      double((trainer.steps() - first_step) * tokens_per_step) /
          std::max(train_seconds, 1e-9),
      args.output, out_stem, out_stem);
  if (trainer.steps() < o.steps) {
    fmt::print("stopped at step {} of {}: nascent train-lm --resume {}\n",
               trainer.steps(), o.steps, args.output);
    return 0;
  }
  print_samples(trainer, out_stem, args.samples);
  fmt::print("next: nascent export {} {}.gguf --type f16\n", args.output,
             out_stem);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "train-lm", "train a small LLaMA language model on a text corpus",
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<Args>();
      llama::LmOptions& o = args->options;
      sub.add_option("--corpus", args->corpus,
                     "text files (fortune files split at %% lines, others at "
                     "blank lines; default: Debian's fortunes)");
      sub.add_option("--tokenizer", args->tokenizer, "spm-bpe or byte-bpe")
          ->check(CLI::IsMember({"spm-bpe", "byte-bpe"}))
          ->capture_default_str();
      sub.add_option("--vocab-size", o.n_vocab, "tokens of the vocabulary")
          ->check(CLI::Range(260, 1 << 20))
          ->capture_default_str();
      sub.add_option("--dim", o.n_embd, "embedding width")
          ->check(CLI::Range(8, 1 << 16))
          ->capture_default_str();
      sub.add_option("--layers", o.n_layer, "decoder layers")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
      sub.add_option("--heads", o.n_head, "attention heads")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
      sub.add_option("--kv-heads", o.n_head_kv, "key/value heads (GQA)")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
      sub.add_option("--ffn", o.n_ff, "feed-forward width")
          ->check(CLI::Range(1, 1 << 20))
          ->capture_default_str();
      sub.add_option("--seq", o.seq_len, "tokens per training sequence")
          ->check(CLI::Range(1, 1 << 16))
          ->capture_default_str();
      sub.add_option("--ctx", o.n_ctx,
                     "context length written to the model (default --seq)")
          ->check(CLI::Range(0, 1 << 20));
      sub.add_option("-b,--batch", o.train.batch_size,
                     "sequences per micro-batch")
          ->check(CLI::Range(1, 1 << 16))
          ->capture_default_str();
      sub.add_option("--grad-accum", o.grad_accum,
                     "micro-batches averaged per step")
          ->check(CLI::Range(1, 1 << 16))
          ->capture_default_str();
      CLI::Option* steps =
          sub.add_option("--steps", o.steps, "optimizer steps of the run")
              ->check(CLI::Range(int64_t(1), int64_t(1) << 40))
              ->capture_default_str();
      sub.add_option("--lr", o.train.lr, "peak learning rate")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      sub.add_option("--warmup", o.train.warmup_steps,
                     "linear warm-up steps before the cosine decay")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      sub.add_option("--weight-decay", o.train.weight_decay, "AdamW's decay")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      sub.add_option("--optimizer", o.train.optimizer, "adamw, adam or sgd")
          ->check(CLI::IsMember({"adam", "adamw", "sgd"}))
          ->capture_default_str();
      sub.add_option("--clip", o.clip, "largest gradient norm (0: no clipping)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      sub.add_option("-s,--seed", o.train.seed,
                     "seed of the initialisation and the batches")
          ->capture_default_str();
      sub.add_option("--eval-every", args->eval_every,
                     "held-out loss every N steps (0: at the end only)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
      sub.add_option("--eval-windows", args->eval_windows,
                     "held-out sequences scored per evaluation")
          ->check(CLI::Range(1, 1 << 20))
          ->capture_default_str();
      sub.add_option("--heldout-every", args->heldout_every,
                     "hold out one document in N")
          ->check(CLI::Range(2, 1 << 20))
          ->capture_default_str();
      sub.add_option("--samples", args->samples,
                     "texts generated at the end (0: none)")
          ->check(CLI::Range(0, 100))
          ->capture_default_str();
      sub.add_option("--save-every", args->save_every,
                     "also checkpoint every N steps (0: at the end)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--stop-at", args->stop_at,
                     "stop (with a checkpoint) after step N of the run, to "
                     "go on later with --resume")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("-t,--threads", args->threads,
                     "CPU threads (default: NASCENT_NUM_THREADS or all cores)")
          ->check(CLI::Range(1, 1024));
      sub.add_option("-d,--device", args->device, "cpu, cuda or cuda:N")
          ->capture_default_str();
      sub.add_option("-o,--output", args->output, "checkpoint path")
          ->capture_default_str();
      sub.add_option("--resume", args->resume,
                     "continue a run from its checkpoint with its options, "
                     "tokenizer, corpus and evaluation settings; --steps may "
                     "extend it");
      return [=] {
        args->steps_given = steps->count() > 0;
        return train_lm(*args);
      };
    });
