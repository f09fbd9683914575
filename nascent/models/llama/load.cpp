// Loading: the Config, then every tensor checked (presence, type, shape) and
// handed to the backend once (in place in the mapping on the CPU, uploaded
// in its stored type on a device); the KV cache allocated once.
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/model_impl.h"

namespace nascent::llama {

namespace detail {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

}  // namespace

Transformer::Transformer(Config config,
                         std::shared_ptr<const gguf::Reader> file,
                         Backend& backend, int64_t n_ctx, int32_t n_seq)
    : Model(std::move(config), std::move(file), backend, n_ctx, n_seq) {
  load_weights();
  const Config& c = config_;
  rope_.dims = c.rope_dim;
  rope_.mode = c.rope_mode;
  rope_.base = c.rope_freq_base;
  rope_.scale = c.rope_scale;
  k_cache_.resize(size_t(n_seq));
  v_cache_.resize(size_t(n_seq));
  for (int32_t s = 0; s < n_seq; ++s) {
    for (int64_t l = 0; l < c.n_layer; ++l) {
      // Left uninitialised: attention reads only positions already written,
      // and (on the CPU) untouched pages of a large allocation cost no
      // memory.
      k_cache_[size_t(s)].push_back(Tensor::empty(
          {c.n_head_kv, n_ctx_, c.head_dim}, DType::f32, backend));
      v_cache_[size_t(s)].push_back(Tensor::empty(
          {c.n_head_kv, n_ctx_, c.head_dim}, DType::f32, backend));
    }
  }
}

QuantWeight Transformer::matrix(const std::string& name, int64_t rows,
                                int64_t cols) const {
  const gguf::TensorInfo* info = file_->find_tensor(name);
  if (info == nullptr) {
    throw FormatError(
        fmt::format("{}: tensor '{}' is missing", file_->path(), name));
  }
  const std::vector<int64_t> want{rows, cols};
  if (info->shape != want) {
    throw FormatError(fmt::format("{}: tensor '{}' has shape {}, expected {}",
                                  file_->path(), name, shape_str(info->shape),
                                  shape_str(want)));
  }
  if (info->type == QuantType::q8_k) {
    throw FormatError(
        fmt::format("{}: tensor '{}' has type q8_K, which is not a weight type",
                    file_->path(), name));
  }
  const std::span<const std::byte> bytes = file_->tensor_data(*info);
  const int64_t row = int64_t(row_bytes(info->type, cols));
  QuantWeight m;
  m.type = info->type;
  m.w = Tensor::make({rows, row}, {row, 1}, 0, DType::u8, *backend_,
                     backend_->wrap(file_, bytes.data(), bytes.size()));
  return m;
}

Tensor Transformer::vec(const std::string& name, int64_t n) const {
  const gguf::TensorInfo* info = file_->find_tensor(name);
  if (info == nullptr) {
    throw FormatError(
        fmt::format("{}: tensor '{}' is missing", file_->path(), name));
  }
  if (info->shape != std::vector<int64_t>{n}) {
    throw FormatError(fmt::format("{}: tensor '{}' has shape {}, expected [{}]",
                                  file_->path(), name, shape_str(info->shape),
                                  n));
  }
  // Small: decoded to f32 once, by the backend.
  const std::span<const std::byte> bytes = file_->tensor_data(*info);
  const int64_t row = int64_t(bytes.size());
  const Tensor raw =
      Tensor::make({1, row}, {row, 1}, 0, DType::u8, *backend_,
                   backend_->wrap(file_, bytes.data(), bytes.size()));
  return dequantize(raw, info->type).view({n});
}

void Transformer::load_weights() {
  const Config& c = config_;
  const int64_t d = c.n_embd, q_dim = c.n_head * c.head_dim;
  const int64_t kv_dim = c.n_head_kv * c.head_dim;
  token_embd_ = matrix("token_embd.weight", c.n_vocab, d);
  output_ = c.tied_output ? token_embd_ : matrix("output.weight", c.n_vocab, d);
  output_norm_ = vec("output_norm.weight", d);
  if (c.rope_freqs) {
    rope_freqs_ = vec("rope_freqs.weight", c.rope_dim / 2);
  }
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    Layer L;
    L.attn_norm = vec(p + "attn_norm.weight", d);
    L.ffn_norm = vec(p + "ffn_norm.weight", d);
    L.wq = matrix(p + "attn_q.weight", q_dim, d);
    L.wk = matrix(p + "attn_k.weight", kv_dim, d);
    L.wv = matrix(p + "attn_v.weight", kv_dim, d);
    L.wo = matrix(p + "attn_output.weight", d, q_dim);
    L.w_gate = matrix(p + "ffn_gate.weight", c.n_ff, d);
    L.w_up = matrix(p + "ffn_up.weight", c.n_ff, d);
    L.w_down = matrix(p + "ffn_down.weight", d, c.n_ff);
    if (c.qkv_bias) {
      L.bq = vec(p + "attn_q.bias", q_dim);
      L.bk = vec(p + "attn_k.bias", kv_dim);
      L.bv = vec(p + "attn_v.bias", kv_dim);
    }
    layers_.push_back(std::move(L));
  }
}

}  // namespace detail

int64_t Model::n_past(int32_t seq) const {
  if (seq < 0 || seq >= n_seq()) {
    throw ValueError(fmt::format(
        "llama::Model::n_past: sequence {} is outside [0, {})", seq, n_seq()));
  }
  return n_past_[size_t(seq)];
}

void Model::truncate(int64_t n, int32_t seq) {
  const int64_t past = n_past(seq);
  if (n < 0 || n > past) {
    throw ValueError(fmt::format(
        "llama::Model::truncate: {} is outside the {} cached positions of "
        "sequence {}",
        n, past, seq));
  }
  n_past_[size_t(seq)] = n;
}

void Model::reset() {
  std::fill(n_past_.begin(), n_past_.end(), 0);
}

Tensor Model::forward(std::span<const int32_t> tokens, int64_t n_past,
                      LogitsMode mode) {
  const SeqChunk chunk{.seq = 0,
                       .n_past = n_past,
                       .tokens = tokens,
                       .n_logits = mode == LogitsMode::all
                                       ? int64_t(tokens.size())
                                       : int64_t(1)};
  return forward_batch(std::span<const SeqChunk>(&chunk, 1));
}

std::shared_ptr<Model> load(std::shared_ptr<const gguf::Reader> file,
                            Backend& backend, LoadOptions options) {
  Config config = Config::from_gguf(*file);
  int64_t n_ctx = options.n_ctx;
  if (n_ctx < 0) {
    throw ValueError(fmt::format("llama::load: n_ctx = {} is negative", n_ctx));
  }
  if (n_ctx == 0) n_ctx = std::min<int64_t>(config.n_ctx_train, 4096);
  if (options.n_seq < 1 || options.n_seq > 4096) {
    throw ValueError(fmt::format("llama::load: n_seq = {} is outside [1, 4096]",
                                 options.n_seq));
  }
  // Keys and values in f32 for every layer; sizes are below 2^24 each.
  const double cache_bytes = 8.0 * double(n_ctx) * double(config.n_layer) *
                             double(config.n_head_kv * config.head_dim) *
                             double(options.n_seq);
  if (n_ctx > (int64_t(1) << 24) || cache_bytes > 0x1p48) {
    throw ValueError(fmt::format(
        "llama::load: a KV cache of n_ctx = {} positions is too large", n_ctx));
  }
  return std::make_shared<detail::Transformer>(
      std::move(config), std::move(file), backend, n_ctx, options.n_seq);
}

std::shared_ptr<Model> load(const std::string& path, Backend& backend,
                            LoadOptions options) {
  return load(std::make_shared<const gguf::Reader>(path), backend, options);
}

}  // namespace nascent::llama
