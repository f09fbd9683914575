#include "nascent/models/llama/lm_trainer.h"

#include <fmt/format.h>

#include "nascent/core/ops.h"
#include "nascent/io/gguf_json.h"
#include "nascent/io/safetensors.h"
#include "nascent/nn/loss.h"
#include "nascent/train/checkpoint.h"

namespace nascent::llama {

using nlohmann::json;

namespace {

constexpr const char* kKind = "nascent.train-lm";

// SplitMix64: a stateless mix of (seed, step, micro-batch) into the
// offsets of one micro-batch, so batches need no stored RNG state.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

json training_json(const std::string& path) {
  io::SafetensorsReader reader(path);
  auto it = reader.metadata().find("training");
  json training = it == reader.metadata().end()
                      ? json()
                      : json::parse(it->second, nullptr, false);
  if (!training.is_object() || training.value("kind", "") != kKind ||
      !training.contains("options") || !training.contains("tokenizer")) {
    throw FormatError(fmt::format(
        "{}: not a checkpoint of `nascent train-lm` (no language-model "
        "options or tokenizer)",
        path));
  }
  return training;
}

}  // namespace

train::TrainOptions LmOptions::default_train_options() {
  train::TrainOptions o;
  o.model = "llama";
  o.optimizer = "adamw";
  o.lr = 2e-3;
  o.weight_decay = 0.1;
  o.batch_size = 16;
  o.warmup_steps = 50;
  o.epochs = 1;
  return o;
}

Config LmOptions::config() const {
  return Config::llama(n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff,
                       n_ctx > 0 ? n_ctx : seq_len);
}

json LmOptions::to_json() const {
  return {
      {"train", train.to_json()}, {"steps", steps},     {"seq_len", seq_len},
      {"grad_accum", grad_accum}, {"clip", clip},       {"n_vocab", n_vocab},
      {"n_embd", n_embd},         {"n_layer", n_layer}, {"n_head", n_head},
      {"n_head_kv", n_head_kv},   {"n_ff", n_ff},       {"n_ctx", n_ctx}};
}

LmOptions LmOptions::from_json(const json& j) {
  if (!j.is_object() || !j.contains("train")) {
    throw ValueError("language-model options: \"train\" is missing");
  }
  LmOptions o;
  o.train = train::TrainOptions::from_json(j["train"]);
  auto integer = [&](const char* key, int64_t& out) {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      throw ValueError(fmt::format(
          "language-model options: \"{}\" is missing or not an integer", key));
    }
    out = j[key].get<int64_t>();
  };
  integer("steps", o.steps);
  integer("seq_len", o.seq_len);
  integer("grad_accum", o.grad_accum);
  integer("n_vocab", o.n_vocab);
  integer("n_embd", o.n_embd);
  integer("n_layer", o.n_layer);
  integer("n_head", o.n_head);
  integer("n_head_kv", o.n_head_kv);
  integer("n_ff", o.n_ff);
  integer("n_ctx", o.n_ctx);
  if (!j.contains("clip") || !j["clip"].is_number()) {
    throw ValueError("language-model options: \"clip\" is missing");
  }
  o.clip = j["clip"].get<double>();
  return o;
}

LmTrainer::LmTrainer(const LmOptions& options, Backend& inner,
                     gguf::Metadata tokenizer)
    : options_(options), tokenizer_(std::move(tokenizer)), ad_(inner) {
  const LmOptions& o = options_;
  if (o.steps <= 0 || o.seq_len < 1 || o.grad_accum < 1 ||
      o.train.batch_size < 1 || o.clip < 0 ||
      (o.n_ctx > 0 && o.n_ctx < o.seq_len)) {
    throw ValueError(fmt::format(
        "train-lm: steps ({}), sequence length ({}), gradient accumulation "
        "({}) and batch size ({}) must be positive, clip ({}) not negative "
        "and the context ({}) at least the sequence length",
        o.steps, o.seq_len, o.grad_accum, o.train.batch_size, o.clip, o.n_ctx));
  }
  const gguf::Value* tokens = tokenizer_.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || !tokens->is_array() ||
      int64_t(tokens->array_size()) != o.n_vocab) {
    throw ValueError(fmt::format(
        "train-lm: the tokenizer has {} tokens, the model's vocabulary {}",
        tokens && tokens->is_array() ? int64_t(tokens->array_size()) : 0,
        o.n_vocab));
  }
  model_ = std::make_shared<TrainableModel>(o.config(), ad_, o.train.seed);
  std::vector<nn::NamedTensor> named = model_->named_parameters();
  for (const nn::NamedTensor& p : named) {
    autodiff::set_requires_grad(*p.tensor);
    params_.push_back(p.tensor);
  }
  optimizer_ = train::make_optimizer(o.train, named);
  schedule_ = train::make_schedule(o.train, o.steps);
}

Tensor LmTrainer::batch(std::span<const int32_t> tokens, int64_t step,
                        int64_t micro) {
  const int64_t b = options_.train.batch_size, w = options_.seq_len + 1;
  const int64_t n = int64_t(tokens.size());
  if (n < w) {
    throw ValueError(fmt::format(
        "train-lm: {} tokens of text, fewer than one window of {} (sequence "
        "length + 1)",
        n, w));
  }
  std::vector<int32_t> ids(size_t(b * w));
  uint64_t state = mix(options_.train.seed ^ mix(uint64_t(step))) ^
                   mix(uint64_t(micro) + 0x632be59bd9b4e019ull);
  for (int64_t r = 0; r < b; ++r) {
    state = mix(state);
    const int64_t start = int64_t(state % uint64_t(n - w + 1));
    std::copy(tokens.begin() + start, tokens.begin() + start + w,
              ids.begin() + r * w);
  }
  return from_vector(ids, Shape{b, w}, ad_);
}

LmStep LmTrainer::step(std::span<const int32_t> tokens) {
  const int64_t step = steps(), accum = options_.grad_accum;
  optimizer_->set_lr(schedule_->lr(step));
  model_->train();
  std::vector<Tensor> inputs;
  for (Tensor* p : params_) inputs.push_back(*p);
  std::vector<Tensor> grads;
  Tensor loss_sum;
  for (int64_t m = 0; m < accum; ++m) {
    Tensor loss = model_->loss(batch(tokens, step, m));
    std::vector<Tensor> g = autodiff::grad({loss}, inputs);
    autodiff::NoGradGuard no_grad;
    loss = autodiff::detach(loss);
    loss_sum = m == 0 ? loss : loss_sum + loss;
    if (m == 0) {
      grads = std::move(g);
    } else {
      for (size_t i = 0; i < grads.size(); ++i) grads[i] = grads[i] + g[i];
    }
  }
  autodiff::NoGradGuard no_grad;
  if (accum > 1) {
    const double scale = 1.0 / double(accum);
    for (Tensor& g : grads) g = g * scale;
    loss_sum = loss_sum * scale;
  }
  Tensor norm = options_.clip > 0 ? optim::clip_grad_norm(grads, options_.clip)
                                  : Tensor();
  optimizer_->step(grads);
  return {loss_sum, norm};
}

double LmTrainer::evaluate(std::span<const int32_t> tokens,
                           int64_t max_windows) {
  autodiff::NoGradGuard no_grad;
  model_->eval();
  const int64_t t = options_.seq_len, w = t + 1;
  const int64_t windows =
      std::min<int64_t>(max_windows, (int64_t(tokens.size()) - 1) / t);
  if (windows <= 0) {
    throw ValueError(
        fmt::format("train-lm: {} held-out tokens, fewer than one window of {}",
                    tokens.size(), w));
  }
  double loss_sum = 0.0;
  const int64_t per_batch = options_.train.batch_size;
  for (int64_t first = 0; first < windows; first += per_batch) {
    const int64_t count = std::min(per_batch, windows - first);
    std::vector<int32_t> ids(size_t(count * w));
    for (int64_t r = 0; r < count; ++r) {
      const auto begin = tokens.begin() + (first + r) * t;
      std::copy(begin, begin + w, ids.begin() + r * w);
    }
    Tensor loss = model_->loss(from_vector(ids, Shape{count, w}, ad_));
    loss_sum += loss.item<double>() * double(count);
  }
  model_->train();
  return loss_sum / double(windows);
}

void LmTrainer::save(const std::string& path, const json& extra) const {
  json training = extra.is_object() ? extra : json::object();
  training["kind"] = kKind;
  training["options"] = options_.to_json();
  training["tokenizer"] = gguf::to_json(tokenizer_);
  train::save_checkpoint(path, *model_, optimizer_.get(), training);
}

LmOptions LmTrainer::checkpoint_options(const std::string& path) {
  json training = training_json(path);
  try {
    return LmOptions::from_json(training["options"]);
  } catch (const ValueError& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  }
}

gguf::Metadata LmTrainer::checkpoint_tokenizer(const std::string& path) {
  return gguf::metadata_from_json(training_json(path)["tokenizer"],
                                  path + " (tokenizer)");
}

json LmTrainer::checkpoint_state(const std::string& path) {
  return training_json(path);
}

json LmTrainer::load(const std::string& path) {
  const LmOptions saved = checkpoint_options(path);
  auto shape = [](const LmOptions& o) {
    return fmt::format(
        "vocab {}, dim {}, {} layers, {}/{} heads, ffn {}, ctx {}, {}",
        o.n_vocab, o.n_embd, o.n_layer, o.n_head, o.n_head_kv, o.n_ff,
        o.config().n_ctx_train, o.train.optimizer);
  };
  if (shape(saved) != shape(options_)) {
    throw ValueError(fmt::format("{}: trained a model of {}, not of {}", path,
                                 shape(saved), shape(options_)));
  }
  return train::load_checkpoint(path, *model_, optimizer_.get());
}

}  // namespace nascent::llama
