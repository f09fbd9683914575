// A trainer for LLaMA language models (`nascent train-lm`): it owns the
// model (TrainableModel), AdamW or another optimizer of
// TrainOptions, the warm-up + cosine schedule and the autodiff backend; a
// step averages the gradients of `grad_accum` micro-batches, clips their
// joint norm and updates. Batches are windows of a token stream at offsets
// drawn from (seed, step, micro-batch), so a resumed run needs only the step
// count to draw the same ones: N steps, a checkpoint, and M more steps give
// the weights N + M steps give, bit for bit. The tokenizer (GGUF keys)
// travels in the checkpoint so `nascent export` can write a complete GGUF.
//
//   llama::LmOptions o;                        // the default small model
//   llama::LmTrainer t(o, cpu, tokenizer_keys);
//   while (t.steps() < o.steps) t.step(train_tokens);
//   t.save("lm.safetensors");
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nascent/autodiff/autodiff.h"
#include "nascent/io/gguf.h"
#include "nascent/models/llama/trainable.h"
#include "nascent/train/options.h"

namespace nascent::llama {

struct LmOptions {
  // Optimizer, peak learning rate, schedule, warm-up, weight decay, batch
  // size (sequences per micro-batch) and seed. `epochs` is unused.
  train::TrainOptions train = default_train_options();
  int64_t steps = 500;  // Optimizer steps of the whole run.
  int64_t seq_len = 128;
  int64_t grad_accum = 1;  // Micro-batches per step.
  double clip = 1.0;       // Largest joint gradient norm; 0 turns it off.
  // The model.
  int64_t n_vocab = 2048;
  int64_t n_embd = 192;
  int64_t n_layer = 4;
  int64_t n_head = 6;
  int64_t n_head_kv = 6;
  int64_t n_ff = 512;
  int64_t n_ctx = 0;  // 0: seq_len.

  static train::TrainOptions default_train_options();
  Config config() const;
  nlohmann::json to_json() const;
  // ValueError naming the field if one is missing or of the wrong type.
  static LmOptions from_json(const nlohmann::json& j);
};

struct LmStep {
  Tensor loss;       // Mean over the micro-batches; 0-d, not yet read back.
  Tensor grad_norm;  // Before clipping; 0-d.
};

class LmTrainer {
 public:
  // ValueError for options that do not fit together (sizes, a tokenizer
  // whose token count is not n_vocab).
  LmTrainer(const LmOptions& options, Backend& inner, gguf::Metadata tokenizer);

  const LmOptions& options() const { return options_; }
  const gguf::Metadata& tokenizer() const { return tokenizer_; }
  Backend& backend() { return ad_; }
  TrainableModel& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  int64_t steps() const { return optimizer_->step_count(); }
  double lr_at(int64_t step) const { return schedule_->lr(step); }

  // The i32 [batch, seq_len + 1] windows of micro-batch `micro` of step
  // `step`; ValueError if `tokens` is shorter than one window.
  Tensor batch(std::span<const int32_t> tokens, int64_t step, int64_t micro);
  // One optimizer step on windows of `tokens`.
  LmStep step(std::span<const int32_t> tokens);
  // Mean cross-entropy per predicted token over consecutive windows of
  // `tokens` (at most `max_windows` of them), without a tape.
  double evaluate(std::span<const int32_t> tokens, int64_t max_windows);

  // Checkpoints the model, the optimizer, the options, the tokenizer and
  // `extra` (an object, e.g. the loss history).
  void save(const std::string& path,
            const nlohmann::json& extra = nlohmann::json::object()) const;
  // Restores a checkpoint of the same model and optimizer (ValueError
  // otherwise) and returns its training state (what save() stored).
  nlohmann::json load(const std::string& path);

  // What a checkpoint of `nascent train-lm` holds besides the tensors;
  // FormatError naming the file for anything else.
  static LmOptions checkpoint_options(const std::string& path);
  static gguf::Metadata checkpoint_tokenizer(const std::string& path);
  // Everything save() stored besides the tensors.
  static nlohmann::json checkpoint_state(const std::string& path);

 private:
  LmOptions options_;
  gguf::Metadata tokenizer_;
  autodiff::Backend ad_;
  std::shared_ptr<TrainableModel> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<const optim::Schedule> schedule_;
  std::vector<Tensor*> params_;
};

}  // namespace nascent::llama
