#include "nascent/models/llama/trainable.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/io/gguf_writer.h"
#include "nascent/nn/loss.h"

namespace nascent::llama {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw ValueError("llama::TrainableModel: " + what);
}

void check_config(const Config& c) {
  check(c.arch == "llama",
        fmt::format("architecture '{}' cannot be trained (llama)", c.arch));
  check(!c.qkv_bias && !c.rope_freqs && !c.tied_output,
        "q/k/v biases, rope_freqs and a tied output are not supported");
  check(c.rope_scale == 1.0 && c.rope_mode == RopeMode::norm,
        "RoPE scaling and NEOX RoPE are not supported");
  check(c.n_vocab > 0 && c.n_embd > 0 && c.n_layer > 0 && c.n_head > 0 &&
            c.n_head_kv > 0 && c.n_ff > 0 && c.n_ctx_train > 0,
        fmt::format("sizes must be positive (n_vocab {}, n_embd {}, n_layer "
                    "{}, n_head {}, n_head_kv {}, n_ff {}, n_ctx {})",
                    c.n_vocab, c.n_embd, c.n_layer, c.n_head, c.n_head_kv,
                    c.n_ff, c.n_ctx_train));
  check(c.head_dim * c.n_head == c.n_embd && c.head_dim % 2 == 0,
        fmt::format("n_embd {} is not n_head {} heads of an even head_dim {}",
                    c.n_embd, c.n_head, c.head_dim));
  check(c.rope_dim == c.head_dim,
        fmt::format("rope_dim {} must be the head size {}", c.rope_dim,
                    c.head_dim));
  check(c.n_head % c.n_head_kv == 0,
        fmt::format("n_head {} is not a multiple of n_head_kv {}", c.n_head,
                    c.n_head_kv));
}

}  // namespace

TrainableBlock::TrainableBlock(const Config& c, Backend& backend,
                               Generator& gen)
    : config_(c) {
  rope_.dims = c.rope_dim;
  rope_.mode = c.rope_mode;
  rope_.base = c.rope_freq_base;
  const int64_t e = c.n_embd, kv = c.n_head_kv * c.head_dim;
  auto linear = [&](const char* name, int64_t in, int64_t out) {
    return register_module(
        name, std::make_shared<nn::Linear>(in, out, backend, gen, false));
  };
  attn_norm_ = register_module(
      "attn_norm", std::make_shared<nn::RMSNorm>(Shape{e}, backend, c.rms_eps));
  q_ = linear("attn_q", e, e);
  k_ = linear("attn_k", e, kv);
  v_ = linear("attn_v", e, kv);
  o_ = linear("attn_output", e, e);
  ffn_norm_ = register_module(
      "ffn_norm", std::make_shared<nn::RMSNorm>(Shape{e}, backend, c.rms_eps));
  gate_ = linear("ffn_gate", e, c.n_ff);
  up_ = linear("ffn_up", e, c.n_ff);
  down_ = linear("ffn_down", c.n_ff, e);
}

Tensor TrainableBlock::forward(const Tensor& x) {
  const Config& c = config_;
  const int64_t b = x.shape(0), t = x.shape(1), hd = c.head_dim;
  const Tensor positions = arange(0, t, 1, x.backend(), DType::i32);
  const Tensor h = (*attn_norm_)(x);
  // rope takes [..., T, heads, head_dim]; attention wants the heads before
  // the positions.
  const Tensor q = rope((*q_)(h).view({b, t, c.n_head, hd}), positions, rope_)
                       .transpose(1, 2);
  const Tensor k =
      rope((*k_)(h).view({b, t, c.n_head_kv, hd}), positions, rope_)
          .transpose(1, 2);
  const Tensor v = (*v_)(h).view({b, t, c.n_head_kv, hd}).transpose(1, 2);
  AttentionParams p;
  p.scale = 1.0 / std::sqrt(double(hd));
  p.causal = true;
  const Tensor a = scaled_dot_product_attention(q, k, v, p);
  // [B, H, T, hd] laid out as [B, T, H, hd]: the heads side by side.
  const Tensor y = x + (*o_)(a.transpose(1, 2).reshape({b, t, c.n_embd}));
  const Tensor f = (*ffn_norm_)(y);
  return y + (*down_)(swiglu((*gate_)(f), (*up_)(f)));
}

TrainableModel::TrainableModel(const Config& config, Backend& backend,
                               uint64_t seed)
    : config_(config) {
  check_config(config_);
  Generator gen(seed);
  const Config& c = config_;
  token_embd_ = register_module(
      "token_embd",
      std::make_shared<nn::Embedding>(c.n_vocab, c.n_embd, backend, gen));
  auto blk = std::make_shared<nn::Sequential>();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    blocks_.push_back(std::make_shared<TrainableBlock>(c, backend, gen));
    blk->add(blocks_.back());
  }
  register_module("blk", blk);
  output_norm_ = register_module(
      "output_norm",
      std::make_shared<nn::RMSNorm>(Shape{c.n_embd}, backend, c.rms_eps));
  output_ = register_module(
      "output",
      std::make_shared<nn::Linear>(c.n_embd, c.n_vocab, backend, gen, false));
}

std::string TrainableModel::describe() const {
  const Config& c = config_;
  return fmt::format(
      "Llama(vocab={}, dim={}, layers={}, heads={}, kv_heads={}, ffn={}, "
      "ctx={})",
      c.n_vocab, c.n_embd, c.n_layer, c.n_head, c.n_head_kv, c.n_ff,
      c.n_ctx_train);
}

void TrainableModel::check_ids(const Tensor& ids, int64_t min_len) const {
  const bool integer = ids.dtype() == DType::i32 || ids.dtype() == DType::i64;
  if (!integer || ids.ndim() != 2 || ids.shape(1) < min_len ||
      ids.shape(1) - (min_len - 1) > config_.n_ctx_train) {
    throw ShapeError(fmt::format(
        "llama::TrainableModel: ids must be i32 or i64 [batch, T] with {} <= "
        "T <= {}, got {}",
        min_len, config_.n_ctx_train + min_len - 1, ids.to_string()));
  }
}

Tensor TrainableModel::forward(const Tensor& ids) {
  check_ids(ids, 1);
  Tensor x = (*token_embd_)(ids);
  for (const auto& block : blocks_) x = (*block)(x);
  return (*output_)((*output_norm_)(x));
}

Tensor TrainableModel::loss(const Tensor& ids) {
  check_ids(ids, 2);
  const int64_t b = ids.shape(0), t = ids.shape(1) - 1;
  const Tensor logits = forward(ids.narrow(1, 0, t));
  const Tensor targets = ids.narrow(1, 1, t).reshape({b * t});
  return nn::cross_entropy(logits.reshape({b * t, config_.n_vocab}), targets);
}

void export_gguf(TrainableModel& model, const gguf::Metadata& tokenizer,
                 QuantType type, const std::string& path,
                 const std::string& name) {
  const Config& c = model.config();
  const gguf::Value* tokens = tokenizer.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || int64_t(tokens->array_size()) != c.n_vocab) {
    throw ValueError(fmt::format(
        "llama::export_gguf: the tokenizer has {} tokens, the model {}",
        tokens ? int64_t(tokens->array_size()) : 0, c.n_vocab));
  }
  gguf::Writer w;
  w.metadata() = c.to_gguf(type, name);
  for (const auto& [key, value] : tokenizer.entries()) {
    if (key.rfind("tokenizer.", 0) == 0) w.metadata().set(key, value);
  }
  for (const nn::NamedTensor& p : model.named_parameters()) {
    const Tensor& t = *p.tensor;
    const QuantType stored = t.ndim() == 1 ? QuantType::f32 : type;
    const int64_t cols = t.shape(t.ndim() - 1);
    if (cols % block_size(stored) != 0) {
      throw ValueError(fmt::format(
          "llama::export_gguf: {} has rows of {} values, not whole {} blocks "
          "of {}",
          p.name, cols, nascent::name(stored), block_size(stored)));
    }
    // The blocks now: the parameters may change after this call returns.
    const Tensor q = quantize(t.reshape({t.numel() / cols, cols}), stored);
    const HostBytes host = q.backend().materialize(q);
    const std::byte* begin = host.data + size_t(q.offset());
    std::vector<std::byte> bytes(begin, begin + q.numel());
    w.add_tensor(p.name, t.shape(), stored, std::move(bytes));
  }
  w.write(path);
}

}  // namespace nascent::llama
