// The forward pass: embedding rows, then per layer RMSNorm, q/k/v, RoPE, the
// KV cache, causal attention (attention.cpp), the output projection and the
// SwiGLU FFN; the final norm and the output matrix only for the rows asked
// for.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/quant_fused.h"
#include "nascent/backends/cpu/simd.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/model_impl.h"

namespace nascent::llama::detail {

namespace {

// Tokens per batch: bounds the attention scores (heads * batch * context
// floats) of a long prompt.
constexpr int64_t kMaxBatch = 512;
// Tokens per block of the FFN: bounds its intermediates while keeping
// enough x rows for the mat-mat kernels (each weight row is decoded once per
// block, so a 512-token batch decodes the FFN weights 4 times).
constexpr int64_t kFfnRows = 128;

// Float weights (f32, f16, bf16) take the whole batch in one FFN block:
// widening and packing a weight panel costs ~10% of its products with 128
// rows, ~2.5% with 512 (gemm_xwt.cpp), and their files are large enough
// that the intermediates (~40 MiB at 512 rows) are a small share.
int64_t ffn_rows(QuantType type, int64_t n) {
  const bool is_float = type == QuantType::f32 || type == QuantType::f16 ||
                        type == QuantType::bf16;
  return is_float ? n : kFfnRows;
}

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

// gate = silu(gate) * up, in place: a 512-token batch of TinyLlama would
// otherwise hold four [512, 5632] f32 tensors (44 MiB) at once.
void swiglu_in_place(Tensor& gate, const Tensor& up) {
  float* g = cpu::data_ptr<float>(gate);
  const float* u = cpu::data_ptr<const float>(up);
  cpu::parallel_for(gate.numel(), 4096, [=](int64_t i0, int64_t i1) {
    cpu::simd::unary(UnaryOp::silu, DType::f32, g + i0, g + i0, i1 - i0, {});
    cpu::simd::binary(BinaryOp::mul, DType::f32, g + i0, 1, u + i0, 1, g + i0,
                      i1 - i0);
  });
}

// x += y for a contiguous row block x (of the residual stream, which no
// other tensor shares) and y of its shape.
void add_in_place(Tensor& x, const Tensor& y) {
  float* a = cpu::data_ptr<float>(x);
  const float* b = cpu::data_ptr<const float>(y);
  cpu::parallel_for(x.numel(), 4096, [=](int64_t i0, int64_t i1) {
    cpu::simd::binary(BinaryOp::add, DType::f32, a + i0, 1, b + i0, 1, a + i0,
                      i1 - i0);
  });
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
    add_in_place(x, linear(attention(q, l, pos0, n), L.wo));
    h = rms_norm(x, &L.ffn_norm, eps);
    // The FFN by blocks of rows: its [rows, n_ff] intermediates (and the
    // quantized copy of the down projection's input) are the largest
    // activations of a prompt.
    const int64_t block = ffn_rows(L.w_gate.type, n);
    for (int64_t r0 = 0; r0 < n; r0 += block) {
      const int64_t rows = std::min(block, n - r0);
      const Tensor hr = h.narrow(0, r0, rows);
      auto [gate, up] = linears<2>(hr, {&L.w_gate, &L.w_up});
      swiglu_in_place(gate, up);
      Tensor xr = x.narrow(0, r0, rows);
      add_in_place(xr, linear(gate, L.w_down));
    }
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
