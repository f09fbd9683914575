// The CPU implementation of llama::Model (internal to models/llama).
#pragma once

#include <vector>

#include "nascent/models/llama/model.h"

namespace nascent::llama::detail {

// A matrix in the file's stored type: u8 [rows, row bytes] over the mapping.
struct Matrix {
  Tensor w;
  QuantType type = QuantType::f32;
};

struct Layer {
  Tensor attn_norm, ffn_norm;  // f32 [n_embd].
  Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
  Tensor bq, bk, bv;  // f32, qkv_bias only.
};

class CpuModel final : public Model {
 public:
  CpuModel(Config config, std::shared_ptr<const gguf::Reader> file,
           Backend& backend, int64_t n_ctx);
  Tensor forward(std::span<const int32_t> tokens, int64_t n_past,
                 LogitsMode mode) override;

 private:
  void load_weights();
  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const;
  Tensor vec(const std::string& name, int64_t n) const;
  // One batch at positions [pos0, pos0 + tokens.size()): logits of the last
  // `n_out` tokens, or nothing for n_out = 0.
  Tensor run_batch(std::span<const int32_t> tokens, int64_t pos0,
                   int64_t n_out);
  Tensor embed(std::span<const int32_t> tokens) const;
  Tensor attention(const Tensor& q, int64_t layer, int64_t pos0,
                   int64_t n) const;

  Matrix token_embd_, output_;
  Tensor output_norm_;
  std::vector<float> rope_freqs_;  // Divisors per pair (rope_freqs.weight).
  std::vector<Layer> layers_;
  std::vector<Tensor> k_cache_, v_cache_;  // f32 [n_head_kv, n_ctx, head_dim].
};

// RoPE in place on x f32 [n, heads, head_dim] (contiguous) for positions
// pos0 .. pos0 + n - 1, computed in float the way ggml does (rope.cpp).
void apply_rope(const Config& c, const std::vector<float>& freq_factors,
                float* x, int64_t n, int64_t heads, int64_t pos0);
}  // namespace nascent::llama::detail
