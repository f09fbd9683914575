// A LLaMA built from nn modules, for training: f32 parameters named as the
// tensors of a GGUF file ("token_embd.weight", "blk.0.attn_q.weight", ...),
// a forward pass over a batch of whole sequences (causal attention from
// position 0, no KV cache) through the same ops as the inference model
// (embedding, rms_norm, rope, scaled_dot_product_attention, swiglu), so an
// autodiff backend differentiates it and export_gguf writes a file that
// llama::load and llama.cpp run with the same logits.
//
//   autodiff::Backend ad(cpu);
//   llama::Config c = llama::Config::llama(4096, 288, 6, 6, 6, 768, 256);
//   llama::TrainableModel lm(c, ad, /*seed*/ 1);
//   Tensor loss = lm.loss(batch);             // i32 [B, T + 1] token ids
//   llama::export_gguf(lm, tokenizer_keys, QuantType::f16, "lm.gguf");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/quant.h"
#include "nascent/core/tensor.h"
#include "nascent/io/gguf.h"
#include "nascent/models/llama/model.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/norm.h"

namespace nascent::llama {

// One decoder layer: attn_norm, attn_{q,k,v,output}, ffn_norm,
// ffn_{gate,up,down}, each holding "weight" as in GGUF.
class TrainableBlock final : public nn::Module {
 public:
  TrainableBlock(const Config& config, Backend& backend, Generator& gen);
  std::string describe() const override { return "LlamaBlock"; }
  // x f32 [B, T, n_embd] at positions 0 .. T-1 -> the block's output.
  Tensor forward(const Tensor& x) override;

 private:
  const Config config_;
  RopeParams rope_;
  std::shared_ptr<nn::RMSNorm> attn_norm_, ffn_norm_;
  std::shared_ptr<nn::Linear> q_, k_, v_, o_, gate_, up_, down_;
};

class TrainableModel final : public nn::Module {
 public:
  // ValueError naming the field for a Config it cannot train: an
  // architecture other than llama, q/k/v biases, rope_freqs, tied output,
  // RoPE scaling, partial RoPE, or sizes that do not fit together.
  TrainableModel(const Config& config, Backend& backend, uint64_t seed);
  std::string describe() const override;
  const Config& config() const { return config_; }

  // ids i32 or i64 [B, T] (T <= n_ctx_train, ids in [0, n_vocab)) -> f32
  // logits [B, T, n_vocab], each position seeing itself and the ones before.
  Tensor forward(const Tensor& ids) override;
  // The mean cross entropy of predicting ids[:, t + 1] from ids[:, :t + 1]
  // for ids [B, T + 1] (T >= 1).
  Tensor loss(const Tensor& ids);

 private:
  void check_ids(const Tensor& ids, int64_t min_len) const;

  const Config config_;
  std::shared_ptr<nn::Embedding> token_embd_;
  std::vector<std::shared_ptr<TrainableBlock>> blocks_;
  std::shared_ptr<nn::RMSNorm> output_norm_;
  std::shared_ptr<nn::Linear> output_;
};

// Writes `model` as a GGUF file (atomically): config().to_gguf (with `name`),
// `tokenizer`'s tokenizer.* keys (whose token count must be n_vocab), the
// matrices in `type` (f32, f16, bf16 or a block type whose blocks divide
// every row) and the norms in f32. ValueError for a type that does not fit.
void export_gguf(TrainableModel& model, const gguf::Metadata& tokenizer,
                 QuantType type, const std::string& path,
                 const std::string& name = "nascent llama");

}  // namespace nascent::llama
