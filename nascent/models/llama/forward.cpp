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

}  // namespace

// h [n, n_embd] -> the attention block's output [n, n_embd]. The
// projections and RoPE run over the whole batch; each piece's keys and
// values go into its own slot's cache of layer l, and its queries attend to
// that cache alone.
Tensor Transformer::attention(const Layer& L, const Tensor& h, int64_t l,
                              const Tensor& positions,
                              std::span<const Piece> pieces) const {
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
  const Tensor v = qkv[2].view({n, c.n_head_kv, hd});
  AttentionParams p;
  p.scale = 1.0 / std::sqrt(double(hd));
  p.causal = true;
  std::vector<Tensor> outs;
  int64_t off = 0;
  for (const Piece& piece : pieces) {
    const int64_t m = int64_t(piece.tokens.size()), pos0 = piece.pos0;
    const Tensor& kc = k_cache_[size_t(piece.seq)][size_t(l)];
    const Tensor& vc = v_cache_[size_t(piece.seq)][size_t(l)];
    assign(kc.narrow(1, pos0, m), k.narrow(0, off, m).transpose(0, 1));
    assign(vc.narrow(1, pos0, m), v.narrow(0, off, m).transpose(0, 1));
    // Queries [1, n_head, m, hd] over the cached positions [0, pos0 + m).
    const int64_t len = pos0 + m;
    const Tensor o = scaled_dot_product_attention(
        q.narrow(0, off, m).unsqueeze(0).transpose(1, 2),
        kc.narrow(1, 0, len).unsqueeze(0), vc.narrow(1, 0, len).unsqueeze(0),
        p);
    // [1, m, n_head, hd] is contiguous: the heads side by side per token.
    outs.push_back(o.transpose(1, 2).reshape({m, c.n_head * hd}));
    off += m;
  }
  const Tensor o = outs.size() == 1 ? outs[0] : cat(outs, 0);
  return qmatmul(o, L.wo);
}

// x += the FFN of RMSNorm(x), by blocks of rows: its [rows, n_ff]
// intermediates are the largest activations of a prompt.
void Transformer::feed_forward(const Layer& L, Tensor& x) const {
  const int64_t n = x.shape(0);
  const Tensor h = rms_norm(x, &L.ffn_norm, float(config_.rms_eps));
  // The backend's row blocks bound the FFN's intermediates where it wants
  // them (the CPU, for the block types).
  const int64_t limit = backend_->qmatmul_block_rows(L.w_gate.type);
  const int64_t block = limit > 0 ? limit : n;
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

Tensor Transformer::run_batch(std::span<const Piece> pieces) {
  const Config& c = config_;
  const float eps = float(c.rms_eps);
  std::vector<int32_t> ids, pos;
  for (const Piece& piece : pieces) {
    ids.insert(ids.end(), piece.tokens.begin(), piece.tokens.end());
    for (int64_t i = 0; i < int64_t(piece.tokens.size()); ++i) {
      pos.push_back(int32_t(piece.pos0 + i));
    }
  }
  const int64_t n = int64_t(ids.size());
  const Tensor id_t = from_data(ids.data(), {n}, DType::i32, *backend_);
  const Tensor positions = from_data(pos.data(), {n}, DType::i32, *backend_);
  Tensor x = qembedding(token_embd_.w, id_t, token_embd_.type);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers_[size_t(l)];
    x = x + attention(L, rms_norm(x, &L.attn_norm, eps), l, positions, pieces);
    feed_forward(L, x);
  }
  // The rows asked for, in piece order.
  std::vector<Tensor> rows;
  int64_t off = 0;
  for (const Piece& piece : pieces) {
    off += int64_t(piece.tokens.size());
    if (piece.n_out > 0)
      rows.push_back(x.narrow(0, off - piece.n_out, piece.n_out));
  }
  if (rows.empty()) return {};
  const Tensor last = rows.size() == 1 ? rows[0] : cat(rows, 0);
  return qmatmul(rms_norm(last, &output_norm_, eps), output_);
}

Tensor Transformer::forward_batch(std::span<const SeqChunk> chunks) {
  // Everything is checked before any cache changes.
  if (chunks.empty()) {
    throw ValueError("llama::Model::forward_batch: no sequences");
  }
  std::vector<bool> seen(n_past_.size(), false);
  for (const SeqChunk& ch : chunks) {
    if (ch.seq < 0 || ch.seq >= n_seq()) {
      throw ValueError(
          fmt::format("llama::Model::forward: sequence {} is outside [0, {})",
                      ch.seq, n_seq()));
    }
    if (seen[size_t(ch.seq)]) {
      throw ValueError(fmt::format(
          "llama::Model::forward_batch: sequence {} appears twice", ch.seq));
    }
    seen[size_t(ch.seq)] = true;
    const int64_t n = int64_t(ch.tokens.size());
    const int64_t past = n_past_[size_t(ch.seq)];
    if (ch.n_past < 0 || ch.n_past > past) {
      throw ValueError(fmt::format(
          "llama::Model::forward: n_past = {} is outside the {} cached "
          "positions",
          ch.n_past, past));
    }
    if (n == 0 || n > n_ctx_ - ch.n_past) {
      throw ValueError(fmt::format(
          "llama::Model::forward: {} tokens after {} do not fit the context "
          "of {} (at least one token is needed)",
          n, ch.n_past, n_ctx_));
    }
    if (ch.n_logits < 0 || ch.n_logits > n) {
      throw ValueError(fmt::format(
          "llama::Model::forward_batch: n_logits = {} is outside [0, {}]",
          ch.n_logits, n));
    }
    for (const int32_t id : ch.tokens) {
      if (id < 0 || id >= config_.n_vocab) {
        throw ValueError(fmt::format(
            "llama::Model::forward: token id {} is outside the vocabulary "
            "[0, {})",
            id, config_.n_vocab));
      }
    }
  }
  for (const SeqChunk& ch : chunks) n_past_[size_t(ch.seq)] = ch.n_past;
  // Batches of at most kMaxBatch tokens; a long chunk spans several, and its
  // logits come from the pieces that hold its last n_logits tokens.
  std::vector<Tensor> logits;
  std::vector<Piece> batch;
  int64_t room = kMaxBatch;
  auto flush = [&] {
    Tensor out = run_batch(batch);
    // Positions count once their keys and values are in the cache.
    for (const Piece& piece : batch) {
      n_past_[size_t(piece.seq)] += int64_t(piece.tokens.size());
    }
    if (out.defined()) logits.push_back(std::move(out));
    batch.clear();
    room = kMaxBatch;
  };
  for (const SeqChunk& ch : chunks) {
    const int64_t n = int64_t(ch.tokens.size());
    for (int64_t start = 0; start < n;) {
      const int64_t m = std::min(room, n - start);
      const int64_t after = n - (start + m);  // Tokens of later pieces.
      const int64_t n_out = std::clamp(ch.n_logits - after, int64_t(0), m);
      batch.push_back({ch.seq, ch.n_past + start,
                       ch.tokens.subspan(size_t(start), size_t(m)), n_out});
      start += m;
      room -= m;
      if (room == 0) flush();
    }
  }
  if (!batch.empty()) flush();
  if (logits.empty()) return {};
  return logits.size() == 1 ? logits[0] : cat(logits, 0);
}

}  // namespace nascent::llama::detail
