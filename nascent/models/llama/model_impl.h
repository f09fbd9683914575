// The implementation of llama::Model (internal to models/llama): the
// weights as tensors of the model's backend, the KV cache, the forward pass.
#pragma once

#include <span>
#include <vector>

#include "nascent/core/ops.h"
#include "nascent/models/llama/model.h"

namespace nascent::llama::detail {

struct Layer {
  Tensor attn_norm, ffn_norm;  // f32 [n_embd].
  QuantWeight wq, wk, wv, wo, w_gate, w_up, w_down;
  Tensor bq, bk, bv;  // f32, qkv_bias only.
};

class Transformer final : public Model {
 public:
  Transformer(Config config, std::shared_ptr<const gguf::Reader> file,
              Backend& backend, int64_t n_ctx, int32_t n_seq);
  Tensor forward_batch(std::span<const SeqChunk> chunks) override;

 private:
  // load.cpp
  void load_weights();
  QuantWeight matrix(const std::string& name, int64_t rows, int64_t cols) const;
  Tensor vec(const std::string& name, int64_t n) const;
  // forward.cpp. A run of one sequence's tokens in a batch, at positions
  // [pos0, pos0 + tokens.size()) of its slot; logits of its last n_out.
  struct Piece {
    int32_t seq;
    int64_t pos0;
    std::span<const int32_t> tokens;
    int64_t n_out;
  };
  // One batch (at most kMaxBatch tokens): the logits of the pieces' n_out
  // rows in order, or nothing when none asks.
  Tensor run_batch(std::span<const Piece> pieces);
  Tensor attention(const Layer& layer, const Tensor& h, int64_t l,
                   const Tensor& positions,
                   std::span<const Piece> pieces) const;
  void feed_forward(const Layer& layer, Tensor& x) const;

  QuantWeight token_embd_, output_;
  Tensor output_norm_;
  Tensor rope_freqs_;  // f32 [rope_dim / 2] (rope_freqs.weight), or none.
  RopeParams rope_;
  std::vector<Layer> layers_;
  // [seq][layer]: f32 [n_head_kv, n_ctx, head_dim].
  std::vector<std::vector<Tensor>> k_cache_, v_cache_;
};

}  // namespace nascent::llama::detail
