// llama::Config from GGUF metadata, with llama.cpp's keys and defaults.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/models/llama/model.h"

namespace nascent::llama {

namespace {

[[noreturn]] void bad(const gguf::Reader& file, const std::string& what) {
  throw FormatError(fmt::format("{}: {}", file.path(), what));
}

int64_t positive(const gguf::Reader& file, const std::string& key,
                 int64_t value) {
  // 2^24 bounds every size a model has, so products of a few of them (the
  // KV cache, a layer's weights) cannot overflow int64.
  if (value <= 0 || value > (int64_t(1) << 24)) {
    bad(file, fmt::format("{} = {} is out of range", key, value));
  }
  return value;
}

}  // namespace

Config Config::from_gguf(const gguf::Reader& file) {
  const gguf::Metadata& md = file.metadata();
  Config c;
  c.arch = md.get_string("general.architecture");
  if (c.arch != "llama" && c.arch != "qwen2") {
    bad(file, fmt::format("architecture '{}' is not supported (llama, qwen2)",
                          c.arch));
  }
  const std::string a = c.arch + ".";
  auto req = [&](const char* key) {
    return positive(file, a + key, md.get_int(a + key));
  };
  auto opt = [&](const char* key, int64_t fallback) {
    const auto v = md.find_int(a + key);
    return v ? positive(file, a + key, *v) : fallback;
  };
  c.n_embd = req("embedding_length");
  c.n_layer = req("block_count");
  c.n_ff = req("feed_forward_length");
  c.n_head = req("attention.head_count");
  c.n_head_kv = opt("attention.head_count_kv", c.n_head);
  c.n_ctx_train = req("context_length");
  if (c.n_head % c.n_head_kv != 0) {
    bad(file, fmt::format("{}attention.head_count = {} is not a multiple of "
                          "{}attention.head_count_kv = {}",
                          a, c.n_head, a, c.n_head_kv));
  }
  if (c.n_embd % c.n_head != 0 && !md.contains(a + "attention.key_length")) {
    bad(file, fmt::format("{}embedding_length = {} is not a multiple of "
                          "{}attention.head_count = {}",
                          a, c.n_embd, a, c.n_head));
  }
  c.head_dim = opt("attention.key_length", c.n_embd / c.n_head);
  const int64_t value_length = opt("attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    bad(file, fmt::format("{}attention.value_length = {} differs from "
                          "attention.key_length = {}",
                          a, value_length, c.head_dim));
  }
  c.rope_dim = opt("rope.dimension_count", c.head_dim);
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    bad(file, fmt::format("{}rope.dimension_count = {} must be even and at "
                          "most the head size {}",
                          a, c.rope_dim, c.head_dim));
  }
  c.rms_eps = md.get_double(a + "attention.layer_norm_rms_epsilon");
  c.rope_freq_base =
      md.find_double(a + "rope.freq_base").value_or(c.rope_freq_base);
  if (!(c.rms_eps >= 0.0 && c.rms_eps < 1.0) ||
      !(c.rope_freq_base > 0.0 && std::isfinite(c.rope_freq_base))) {
    bad(file, fmt::format("layer_norm_rms_epsilon = {} or rope.freq_base = "
                          "{} is out of range",
                          c.rms_eps, c.rope_freq_base));
  }
  // Linear scaling only: llama.cpp's YaRN and LongRoPE need more state.
  const std::string scaling =
      md.find_string(a + "rope.scaling.type").value_or("");
  if (scaling == "linear") {
    c.rope_scale = md.find_double(a + "rope.scaling.factor").value_or(1.0);
  } else if (scaling.empty() || scaling == "none") {
    c.rope_scale = md.find_double(a + "rope.scale_linear").value_or(1.0);
  } else {
    bad(file, fmt::format("{}rope.scaling.type '{}' is not supported (none, "
                          "linear)",
                          a, scaling));
  }
  // llama.cpp treats a factor of 0 as none.
  if (c.rope_scale == 0.0) c.rope_scale = 1.0;
  if (!(c.rope_scale > 0.0 && std::isfinite(c.rope_scale))) {
    bad(file,
        fmt::format("RoPE scaling factor {} is out of range", c.rope_scale));
  }
  c.rope_mode = c.arch == "qwen2" ? RopeMode::neox : RopeMode::norm;

  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) bad(file, "tensor 'token_embd.weight' is missing");
  if (embd->shape.size() != 2) {
    bad(file, fmt::format("tensor 'token_embd.weight' has {} dimensions, "
                          "expected 2 [n_vocab, n_embd]",
                          embd->shape.size()));
  }
  c.n_vocab = positive(file, "rows of token_embd.weight", embd->shape[0]);
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  c.qkv_bias = file.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.rope_freqs = file.find_tensor("rope_freqs.weight") != nullptr;
  return c;
}

uint32_t pure_file_type(QuantType type) {
  switch (type) {
    case QuantType::f32:
      return 0;
    case QuantType::f16:
      return 1;
    case QuantType::q4_0:
      return 2;
    case QuantType::q4_1:
      return 3;
    case QuantType::q8_0:
      return 7;
    case QuantType::q5_0:
      return 8;
    case QuantType::q5_1:
      return 9;
    case QuantType::q2_k:
      return 10;
    case QuantType::q3_k:
      return 11;  // Q3_K_S: all q3_K.
    case QuantType::q4_k:
      return 14;  // Q4_K_S
    case QuantType::q5_k:
      return 16;  // Q5_K_S
    case QuantType::q6_k:
      return 18;
    case QuantType::bf16:
      return 32;
    case QuantType::q8_k:
      break;
  }
  throw ValueError(fmt::format(
      "general.file_type: {} is not a type of model weights", name(type)));
}

Config Config::llama(int64_t n_vocab, int64_t n_embd, int64_t n_layer,
                     int64_t n_head, int64_t n_head_kv, int64_t n_ff,
                     int64_t n_ctx) {
  Config c;
  c.arch = "llama";
  c.n_vocab = n_vocab;
  c.n_embd = n_embd;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_head_kv = n_head_kv;
  c.head_dim = n_head > 0 ? n_embd / n_head : 0;
  c.rope_dim = c.head_dim;
  c.n_ff = n_ff;
  c.n_ctx_train = n_ctx;
  return c;
}

gguf::Metadata Config::to_gguf(QuantType weights,
                               const std::string& name) const {
  auto u32 = [](int64_t v) { return gguf::Value(uint32_t(v)); };
  const std::string a = arch + ".";
  gguf::Metadata m;
  m.set("general.architecture", gguf::Value(arch));
  m.set("general.name", gguf::Value(name));
  m.set("general.file_type", gguf::Value(pure_file_type(weights)));
  if (weights != QuantType::f32 && weights != QuantType::f16 &&
      weights != QuantType::bf16) {
    m.set("general.quantization_version", u32(2));
  }
  m.set(a + "context_length", u32(n_ctx_train));
  m.set(a + "embedding_length", u32(n_embd));
  m.set(a + "block_count", u32(n_layer));
  m.set(a + "feed_forward_length", u32(n_ff));
  m.set(a + "attention.head_count", u32(n_head));
  m.set(a + "attention.head_count_kv", u32(n_head_kv));
  if (head_dim * n_head != n_embd) {
    m.set(a + "attention.key_length", u32(head_dim));
    m.set(a + "attention.value_length", u32(head_dim));
  }
  m.set(a + "attention.layer_norm_rms_epsilon", gguf::Value(float(rms_eps)));
  m.set(a + "rope.freq_base", gguf::Value(float(rope_freq_base)));
  m.set(a + "rope.dimension_count", u32(rope_dim));
  if (rope_scale != 1.0) {
    m.set(a + "rope.scaling.type", gguf::Value("linear"));
    m.set(a + "rope.scaling.factor", gguf::Value(float(rope_scale)));
  }
  m.set(a + "vocab_size", u32(n_vocab));
  return m;
}

}  // namespace nascent::llama
