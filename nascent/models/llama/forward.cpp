// The forward pass, in ops only: embedding rows, then per layer RMSNorm,
// q/k/v (one qmatmul for the three), RoPE, the KV cache, causal attention,
// the output projection and the SwiGLU FFN; the final norm and the output
// matrix only for the rows asked for.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/models/llama/model_impl.h"

namespace nascent::llama::detail {

namespace {

// Tokens per batch: bounds the activations of a long prompt.
constexpr int64_t kMaxBatch = 512;
// Tokens per block of the FFN: bounds its intermediates while keeping
// enough x rows for the mat-mat kernels (each weight row is decoded once per
// block, so a 512-token batch decodes the FFN weights 4 times).
constexpr int64_t kFfnRows = 128;

// Float weights (f32, f16, bf16) take the whole batch in one FFN block: on
// the CPU, widening and packing a weight panel costs ~10% of its products
// with 128 rows, ~2.5% with 512 (gemm_xwt.cpp), and their files are large
// enough that the intermediates (~40 MiB at 512 rows) are a small share.
int64_t ffn_rows(QuantType type, int64_t n) {
  const bool is_float = type == QuantType::f32 || type == QuantType::f16 ||
                        type == QuantType::bf16;
  return is_float ? n : kFfnRows;
}

}  // namespace

// h [n, n_embd] -> the attention block's output [n, n_embd]; the keys and
// values of positions [pos0, pos0 + n) go into the cache of layer l.
Tensor Transformer::attention(const Layer& L, const Tensor& h, int64_t l,
                              const Tensor& positions, int64_t pos0) const {
  const Config& c = config_;
  const int64_t n = h.shape(0), hd = c.head_dim;
  const QuantWeight qkv_w[] = {L.wq, L.wk, L.wv};
  std::vector<Tensor> qkv = qmatmul(h, qkv_w);
  if (c.qkv_bias) {
    qkv[0] = qkv[0] + L.bq;
    qkv[1] = qkv[1] + L.bk;
    qkv[2] = qkv[2] + L.bv;
  }
  const Tensor* freqs = rope_freqs_.defined() ? &rope_freqs_ : nullptr;
  const Tensor q =
      rope(qkv[0].view({n, c.n_head, hd}), positions, rope_, freqs);
  const Tensor k =
      rope(qkv[1].view({n, c.n_head_kv, hd}), positions, rope_, freqs);
  const Tensor& kc = k_cache_[size_t(l)];
  const Tensor& vc = v_cache_[size_t(l)];
  assign(kc.narrow(1, pos0, n), k.transpose(0, 1));
  assign(vc.narrow(1, pos0, n),
         qkv[2].view({n, c.n_head_kv, hd}).transpose(0, 1));
  // Queries [1, n_head, n, hd] over the cached positions [0, pos0 + n).
  const int64_t len = pos0 + n;
  AttentionParams p;
  p.scale = 1.0 / std::sqrt(double(hd));
  p.causal = true;
  const Tensor o = scaled_dot_product_attention(
      q.unsqueeze(0).transpose(1, 2), kc.narrow(1, 0, len).unsqueeze(0),
      vc.narrow(1, 0, len).unsqueeze(0), p);
  // [1, n, n_head, hd] is contiguous: the heads side by side per token.
  return qmatmul(o.transpose(1, 2).reshape({n, c.n_head * hd}), L.wo);
}

// x += the FFN of RMSNorm(x), by blocks of rows: its [rows, n_ff]
// intermediates are the largest activations of a prompt.
void Transformer::feed_forward(const Layer& L, Tensor& x) const {
  const int64_t n = x.shape(0);
  const Tensor h = rms_norm(x, &L.ffn_norm, float(config_.rms_eps));
  const int64_t block = ffn_rows(L.w_gate.type, n);
  const QuantWeight gate_up[] = {L.w_gate, L.w_up};
  if (block >= n) {
    const std::vector<Tensor> gu = qmatmul(h, gate_up);
    x = x + qmatmul(swiglu(gu[0], gu[1]), L.w_down);
    return;
  }
  // x is the residual stream's own tensor (a fresh sum): its blocks are
  // updated in place.
  for (int64_t r0 = 0; r0 < n; r0 += block) {
    const int64_t rows = std::min(block, n - r0);
    const std::vector<Tensor> gu = qmatmul(h.narrow(0, r0, rows), gate_up);
    const Tensor xr = x.narrow(0, r0, rows);
    assign(xr, xr + qmatmul(swiglu(gu[0], gu[1]), L.w_down));
  }
}

Tensor Transformer::run_batch(std::span<const int32_t> tokens, int64_t pos0,
                              int64_t n_out) {
  const Config& c = config_;
  const int64_t n = int64_t(tokens.size());
  const float eps = float(c.rms_eps);
  const Tensor ids = from_data(tokens.data(), {n}, DType::i32, *backend_);
  const Tensor positions = arange(pos0, pos0 + n, 1, *backend_, DType::i32);
  Tensor x = qembedding(token_embd_.w, ids, token_embd_.type);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers_[size_t(l)];
    x = x + attention(L, rms_norm(x, &L.attn_norm, eps), l, positions, pos0);
    feed_forward(L, x);
  }
  if (n_out == 0) return {};
  const Tensor last = x.narrow(0, n - n_out, n_out);
  return qmatmul(rms_norm(last, &output_norm_, eps), output_);
}

Tensor Transformer::forward(std::span<const int32_t> tokens, int64_t n_past,
                            LogitsMode mode) {
  const int64_t n = int64_t(tokens.size());
  if (n_past < 0 || n_past > n_past_) {
    throw ValueError(fmt::format(
        "llama::Model::forward: n_past = {} is outside the {} cached positions",
        n_past, n_past_));
  }
  if (n == 0 || n > n_ctx_ - n_past) {
    throw ValueError(fmt::format(
        "llama::Model::forward: {} tokens after {} do not fit the context of "
        "{} (at least one token is needed)",
        n, n_past, n_ctx_));
  }
  for (const int32_t id : tokens) {
    if (id < 0 || id >= config_.n_vocab) {
      throw ValueError(fmt::format(
          "llama::Model::forward: token id {} is outside the vocabulary [0, "
          "{})",
          id, config_.n_vocab));
    }
  }
  n_past_ = n_past;
  std::vector<Tensor> logits;
  for (int64_t start = 0; start < n; start += kMaxBatch) {
    const int64_t m = std::min(kMaxBatch, n - start);
    const bool last_batch = start + m == n;
    const int64_t n_out = mode == LogitsMode::all ? m : last_batch ? 1 : 0;
    Tensor out =
        run_batch(tokens.subspan(size_t(start), size_t(m)), n_past_, n_out);
    // Positions count once their keys and values are in the cache.
    n_past_ += m;
    if (out.defined()) logits.push_back(std::move(out));
  }
  return logits.size() == 1 ? logits[0] : cat(logits, 0);
}

}  // namespace nascent::llama::detail
