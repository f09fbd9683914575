// The forward pass: embedding rows, then per layer RMSNorm, q/k/v, RoPE, the
// KV cache, causal attention, the output projection and the SwiGLU FFN; the
// final norm and the output matrix only for the rows asked for.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/quant_fused.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/model_impl.h"

namespace nascent::llama::detail {

namespace {

// Tokens per batch: bounds the attention scores (heads * batch * context
// floats) of a long prompt.
constexpr int64_t kMaxBatch = 512;

Tensor linear(const Tensor& x, const Matrix& m, const Tensor& bias = {}) {
  Tensor y = qmatmul(x, m.w, m.type);
  return bias.defined() ? y + bias : y;
}

// x @ W^T for several matrices of the same K (h with q, k and v, or with
// gate and up): one pool job for them all when x is a few rows
// (generation), where a job and a barrier each are a visible share of a
// token's time.
template <size_t kN>
std::array<Tensor, kN> linears(const Tensor& x,
                               const std::array<const Matrix*, kN>& ms) {
  const Tensor xc = x.contiguous();
  const int64_t m = xc.shape(0), k = xc.shape(1);
  std::array<Tensor, kN> out;
  std::array<cpu::QLinear, kN> ls;
  for (size_t i = 0; i < kN; ++i) {
    const Tensor& w = ms[i]->w;
    out[i] = Tensor::empty({m, w.shape(0)}, DType::f32, x.backend());
    ls[i] = {ms[i]->type, cpu::data_ptr<const uint8_t>(w), w.strides()[0],
             w.shape(0), cpu::data_ptr<float>(out[i])};
  }
  cpu::qmatmul_fused(cpu::data_ptr<const float>(xc), m, k, ls);
  return out;
}

}  // namespace

void apply_rope(const Config& c, const std::vector<float>& freq_factors,
                float* x, int64_t n, int64_t heads, int64_t pos0) {
  const int64_t half = c.rope_dim / 2;
  const float theta_scale =
      std::pow(float(c.rope_freq_base), -2.0f / float(c.rope_dim));
  const float freq_scale = 1.0f / float(c.rope_scale);
  cpu::parallel_for(n, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> cs(size_t(2 * half));
    for (int64_t t = t0; t < t1; ++t) {
      // ggml's rope cache: theta multiplied up in float, pair by pair.
      float theta = float(pos0 + t);
      for (int64_t i = 0; i < half; ++i) {
        const float ff = freq_factors.empty() ? 1.0f : freq_factors[size_t(i)];
        const float th = freq_scale * (theta / ff);
        cs[size_t(2 * i)] = std::cos(th);
        cs[size_t(2 * i + 1)] = std::sin(th);
        theta *= theta_scale;
      }
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + (t * heads + h) * c.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = c.rope_type == RopeType::norm ? 2 * i : i;
          const int64_t b =
              c.rope_type == RopeType::norm ? 2 * i + 1 : i + half;
          const float cos_t = cs[size_t(2 * i)], sin_t = cs[size_t(2 * i + 1)];
          const float x0 = v[a], x1 = v[b];
          v[a] = x0 * cos_t - x1 * sin_t;
          v[b] = x0 * sin_t + x1 * cos_t;
        }
      }
    }
  });
}

void scale_and_mask(float* scores, int64_t rows, int64_t len, int64_t n,
                    int64_t pos0, float scale) {
  const float ninf = -std::numeric_limits<float>::infinity();
  cpu::parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* s = scores + r * len;
      const int64_t visible = pos0 + r % n + 1;
      for (int64_t j = 0; j < visible; ++j) s[j] *= scale;
      for (int64_t j = visible; j < len; ++j) s[j] = ninf;
    }
  });
}

Tensor CpuModel::embed(std::span<const int32_t> tokens) const {
  const int64_t n = int64_t(tokens.size()), d = config_.n_embd;
  Tensor x = Tensor::empty({n, d}, DType::f32, *backend_);
  const auto* base = cpu::data_ptr<const uint8_t>(token_embd_.w);
  const int64_t row = token_embd_.w.shape(1);
  float* out = cpu::data_ptr<float>(x);
  for (int64_t t = 0; t < n; ++t) {
    dequantize_row(token_embd_.type, base + tokens[size_t(t)] * row,
                   out + t * d, d);
  }
  return x;
}

// q f32 [n, n_head * head_dim], RoPE applied; keys and values of positions
// [0, pos0 + n) are in the cache. Query head h uses key head h / group, as
// ggml's broadcasting matmul does.
Tensor CpuModel::attention(const Tensor& q, int64_t layer, int64_t pos0,
                           int64_t n) const {
  const Config& c = config_;
  const int64_t group = c.n_head / c.n_head_kv, len = pos0 + n;
  const Tensor qh = q.view({n, c.n_head_kv, group, c.head_dim})
                        .permute({1, 2, 0, 3})
                        .contiguous()
                        .view({c.n_head_kv, group * n, c.head_dim});
  const Tensor k = k_cache_[size_t(layer)].narrow(1, 0, len);
  const Tensor v = v_cache_[size_t(layer)].narrow(1, 0, len);
  Tensor scores = matmul(qh, k.transpose(1, 2));  // [kv, group * n, len]
  scale_and_mask(cpu::data_ptr<float>(scores), c.n_head_kv * group * n, len, n,
                 pos0, 1.0f / std::sqrt(float(c.head_dim)));
  const Tensor o = matmul(softmax(scores, -1), v);  // [kv, group * n, hd]
  return o.view({c.n_head_kv, group, n, c.head_dim})
      .permute({2, 0, 1, 3})
      .contiguous()
      .view({n, c.n_head * c.head_dim});
}

Tensor CpuModel::run_batch(std::span<const int32_t> tokens, int64_t pos0,
                           int64_t n_out) {
  const Config& c = config_;
  const int64_t n = int64_t(tokens.size());
  const float eps = float(c.rms_eps);
  Tensor x = embed(tokens);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers_[size_t(l)];
    Tensor h = rms_norm(x, &L.attn_norm, eps);
    auto [q, k, v] = linears<3>(h, {&L.wq, &L.wk, &L.wv});
    if (c.qkv_bias) {
      q = q + L.bq;
      k = k + L.bk;
      v = v + L.bv;
    }
    apply_rope(c, rope_freqs_, cpu::data_ptr<float>(q), n, c.n_head, pos0);
    apply_rope(c, rope_freqs_, cpu::data_ptr<float>(k), n, c.n_head_kv, pos0);
    assign(k_cache_[size_t(l)].narrow(1, pos0, n),
           k.view({n, c.n_head_kv, c.head_dim}).transpose(0, 1));
    assign(v_cache_[size_t(l)].narrow(1, pos0, n),
           v.view({n, c.n_head_kv, c.head_dim}).transpose(0, 1));
    x = x + linear(attention(q, l, pos0, n), L.wo);
    h = rms_norm(x, &L.ffn_norm, eps);
    const auto [gate, up] = linears<2>(h, {&L.w_gate, &L.w_up});
    x = x + linear(silu(gate) * up, L.w_down);
  }
  if (n_out == 0) return {};
  const Tensor last = x.narrow(0, n - n_out, n_out);
  return linear(rms_norm(last, &output_norm_, eps), output_);
}

Tensor CpuModel::forward(std::span<const int32_t> tokens, int64_t n_past,
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
