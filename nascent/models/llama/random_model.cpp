#include "nascent/models/llama/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"

namespace nascent::llama {
namespace {

// SplitMix64's finaliser: independent seeds for the tensors.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Rows per piece of a tensor generated at once: 16 Mi values.
int64_t rows_per_piece(int64_t cols) {
  return std::max<int64_t>(1, (int64_t(1) << 24) / std::max<int64_t>(cols, 1));
}

void check_positive(int64_t v, const char* what) {
  if (v <= 0) {
    throw ValueError(
        fmt::format("random model: {} must be positive, got {}", what, v));
  }
}

// Tensors, in llama.cpp's order; a norm has one axis.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool norm;
};

std::vector<TensorSpec> tensor_specs(const RandomModelConfig& c,
                                     int64_t n_vocab) {
  int64_t head_dim = c.n_embd / c.n_head;
  int64_t kv = head_dim * c.n_head_kv;
  std::vector<TensorSpec> specs;
  specs.push_back({"token_embd.weight", {n_vocab, c.n_embd}, false});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    auto blk = [&](const char* what) {
      return fmt::format("blk.{}.{}", l, what);
    };
    specs.push_back({blk("attn_norm.weight"), {c.n_embd}, true});
    specs.push_back({blk("attn_q.weight"), {c.n_embd, c.n_embd}, false});
    specs.push_back({blk("attn_k.weight"), {kv, c.n_embd}, false});
    specs.push_back({blk("attn_v.weight"), {kv, c.n_embd}, false});
    specs.push_back({blk("attn_output.weight"), {c.n_embd, c.n_embd}, false});
    specs.push_back({blk("ffn_norm.weight"), {c.n_embd}, true});
    specs.push_back({blk("ffn_gate.weight"), {c.n_ff, c.n_embd}, false});
    specs.push_back({blk("ffn_up.weight"), {c.n_ff, c.n_embd}, false});
    specs.push_back({blk("ffn_down.weight"), {c.n_embd, c.n_ff}, false});
  }
  specs.push_back({"output_norm.weight", {c.n_embd}, true});
  if (!c.tied_output) {
    specs.push_back({"output.weight", {n_vocab, c.n_embd}, false});
  }
  return specs;
}

// Characters of the synthetic vocabulary's pieces.
constexpr const char* kLower = "etaoinshrdlcumwfgypbvkjxqz";
constexpr const char* kPieceChars =
    "ETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,;:!?'\"-()[]{}<>/@#$%&*+=_~|";
constexpr const char* kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's ▁.

}  // namespace

gguf::Metadata synthetic_spm_vocab(int64_t n_vocab) {
  if (n_vocab < 300) {
    throw ValueError(fmt::format(
        "synthetic vocabulary: n_vocab {} is below 300 (3 special tokens, "
        "256 byte tokens and some pieces)",
        n_vocab));
  }
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);  // byte
  }
  // Pieces, most useful first so that small vocabularies merge too: ▁, the
  // lower-case letters, ▁ + letter, letter pairs, the other characters,
  // ▁ + character, then other pairs.
  std::string lower = kLower, chars = kPieceChars;
  std::vector<std::string> pieces = {kSpace};
  for (char ch : lower) pieces.push_back(std::string(1, ch));
  for (char ch : lower) pieces.push_back(kSpace + std::string(1, ch));
  for (char a : lower) {
    for (char b : lower) pieces.push_back(std::string{a, b});
  }
  for (char ch : chars) pieces.push_back(std::string(1, ch));
  for (char ch : chars) pieces.push_back(kSpace + std::string(1, ch));
  for (size_t i = 0; i < chars.size() && pieces.size() < size_t(n_vocab); ++i) {
    for (char b : chars) pieces.push_back(std::string{chars[i], b});
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 0; tokens.size() < size_t(n_vocab); ++i) {
    if (i >= pieces.size()) {
      throw ValueError(fmt::format(
          "synthetic vocabulary: n_vocab {} is more than the {} tokens it "
          "can make",
          n_vocab, tokens.size()));
    }
    tokens.push_back(pieces[i]);
    types.push_back(1);  // normal
    scores.push_back(-float(i));
  }
  gguf::Metadata m;
  m.set("tokenizer.ggml.model", gguf::Value("llama"));
  m.set("tokenizer.ggml.pre", gguf::Value("default"));
  m.set("tokenizer.ggml.tokens", gguf::Value::array(std::move(tokens)));
  m.set("tokenizer.ggml.scores", gguf::Value::array(std::move(scores)));
  m.set("tokenizer.ggml.token_type", gguf::Value::array(std::move(types)));
  m.set("tokenizer.ggml.bos_token_id", gguf::Value(uint32_t(1)));
  m.set("tokenizer.ggml.eos_token_id", gguf::Value(uint32_t(2)));
  m.set("tokenizer.ggml.unknown_token_id", gguf::Value(uint32_t(0)));
  m.set("tokenizer.ggml.add_bos_token", gguf::Value(true));
  m.set("tokenizer.ggml.add_eos_token", gguf::Value(false));
  return m;
}

gguf::Metadata random_model_metadata(const RandomModelConfig& c) {
  check_positive(c.n_embd, "n_embd");
  check_positive(c.n_layer, "n_layer");
  check_positive(c.n_head, "n_head");
  check_positive(c.n_head_kv, "n_head_kv");
  check_positive(c.n_ff, "n_ff");
  check_positive(c.n_ctx, "n_ctx");
  if (c.n_embd % c.n_head != 0 || (c.n_embd / c.n_head) % 2 != 0) {
    throw ValueError(fmt::format(
        "random model: n_embd {} is not n_head {} heads of an even size",
        c.n_embd, c.n_head));
  }
  if (c.n_head % c.n_head_kv != 0) {
    throw ValueError(
        fmt::format("random model: n_head {} is not a multiple of n_head_kv {}",
                    c.n_head, c.n_head_kv));
  }
  gguf::Metadata vocab;
  if (c.vocab_file.empty()) {
    vocab = synthetic_spm_vocab(c.n_vocab);
  } else {
    gguf::Reader r(c.vocab_file);
    for (const auto& [key, value] : r.metadata().entries()) {
      if (key.rfind("tokenizer.", 0) == 0) vocab.set(key, value);
    }
    if (!vocab.contains("tokenizer.ggml.tokens")) {
      throw ValueError(fmt::format(
          "random model: {} has no tokenizer.ggml.tokens", c.vocab_file));
    }
  }
  if (!c.chat_template.empty()) {
    vocab.set("tokenizer.chat_template", gguf::Value(c.chat_template));
  }
  Config model = Config::llama(
      int64_t(vocab.at("tokenizer.ggml.tokens").array_size()), c.n_embd,
      c.n_layer, c.n_head, c.n_head_kv, c.n_ff, c.n_ctx);
  model.rms_eps = c.rms_eps;
  model.rope_freq_base = c.rope_freq_base;
  gguf::Metadata m = model.to_gguf(c.type, "nascent random llama");
  for (const auto& [key, value] : vocab.entries()) m.set(key, value);
  return m;
}

void write_random_model(const RandomModelConfig& config,
                        const std::string& path) {
  gguf::Writer w;
  w.metadata() = random_model_metadata(config);
  int64_t n_vocab = w.metadata().get_int("llama.vocab_size");
  std::vector<TensorSpec> specs = tensor_specs(config, n_vocab);
  for (size_t t = 0; t < specs.size(); ++t) {
    const TensorSpec& s = specs[t];
    QuantType type = s.norm ? QuantType::f32 : config.type;
    int64_t cols = s.shape.back();
    if (cols % block_size(type) != 0) {
      throw ValueError(fmt::format(
          "random model: {} has rows of {} values, not whole {} blocks of {}",
          s.name, cols, name(type), block_size(type)));
    }
    int64_t rows = s.shape.size() == 1 ? 1 : s.shape[0];
    const uint64_t seed = mix(config.seed ^ mix(t * 0x9e3779b97f4a7c15ull + 1));
    const bool norm = s.norm;
    auto produce = [=](std::span<std::byte> out) {
      Backend& backend = default_backend();
      const size_t stride = row_bytes(type, cols);
      const double scale = norm ? 0.1 : 1.0 / std::sqrt(double(cols));
      // Philox normals (the same on every backend and thread count), in
      // pieces of rows, encoded by the quantize op.
      Generator gen(seed);
      const int64_t piece = rows_per_piece(cols);
      for (int64_t r0 = 0; r0 < rows; r0 += piece) {
        const int64_t n = std::min(piece, rows - r0);
        Tensor v = normal({n, cols}, norm ? 1.0 : 0.0, scale, backend, gen);
        const Tensor q = quantize(v, type);
        const HostBytes host = backend.materialize(q);
        std::memcpy(out.data() + size_t(r0) * stride,
                    host.data + size_t(q.offset()), size_t(n) * stride);
      }
    };
    w.add_tensor(s.name, s.shape, type, produce);
  }
  w.write(path);
}

}  // namespace nascent::llama
