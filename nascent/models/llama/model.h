// LLaMA-family decoder models read from GGUF files, on any backend:
// llama-1/2/3 and mistral-style files (general.architecture "llama") and
// qwen2 (q/k/v biases, NEOX RoPE). The model is written once against the
// op front-ends (core/ops.h): qembedding, rms_norm, qmatmul, rope,
// scaled_dot_product_attention and swiglu, each run by the backend's
// kernel or by core's composed default.
//
// Weights keep the file's stored type (every matrix goes through qmatmul):
// the CPU uses them in place in the memory mapping, a device backend
// receives each tensor's blocks once at load (Backend::wrap). The KV cache
// is allocated once for the whole context and filled in place; with
// LoadOptions::n_seq it holds several independent sequences (slots), which
// forward_batch runs together in one pass over the weights (a server's
// concurrent requests: continuous batching).
//
//   auto model = llama::load("model.gguf", backend);  // cpu, cuda, ...
//   Tensor logits = model->forward(prompt_ids, 0);  // f32 [1, n_vocab]
//   logits = model->forward(next_id, model->n_past());
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/quant.h"
#include "nascent/core/tensor.h"
#include "nascent/io/gguf_reader.h"

namespace nascent::llama {

// The hyper-parameters, from the `<arch>.` metadata keys (llama.cpp's
// names) and the tensors' shapes.
struct Config {
  std::string arch;         // general.architecture: "llama" or "qwen2".
  int64_t n_vocab = 0;      // Rows of token_embd.weight.
  int64_t n_embd = 0;       // <arch>.embedding_length.
  int64_t n_layer = 0;      // <arch>.block_count.
  int64_t n_head = 0;       // <arch>.attention.head_count.
  int64_t n_head_kv = 0;    // <arch>.attention.head_count_kv (default n_head).
  int64_t head_dim = 0;     // <arch>.attention.key_length (n_embd / n_head).
  int64_t n_ff = 0;         // <arch>.feed_forward_length.
  int64_t n_ctx_train = 0;  // <arch>.context_length.
  double rms_eps = 1e-5;    // <arch>.attention.layer_norm_rms_epsilon.
  double rope_freq_base = 10000.0;  // <arch>.rope.freq_base.
  int64_t rope_dim = 0;  // <arch>.rope.dimension_count (default head_dim).
  // Linear RoPE scaling: positions are divided by this factor
  // (<arch>.rope.scaling.factor with rope.scaling.type "linear", or the
  // older rope.scale_linear). 1: none.
  double rope_scale = 1.0;
  RopeMode rope_mode = RopeMode::norm;  // neox for qwen2.
  bool tied_output = false;  // No output.weight: token_embd is reused.
  bool qkv_bias = false;     // attn_{q,k,v}.bias present (qwen2).
  bool rope_freqs = false;   // rope_freqs.weight present (llama 3.1).

  // FormatError naming the file (metadata.origin()) and the key when a
  // required key is missing, mistyped or out of range, or the architecture
  // is not one of the above.
  static Config from_gguf(const gguf::Reader& file);
  // A "llama" Config of the given sizes (head size n_embd / n_head, RoPE
  // over the whole head, base 10000, RMSNorm epsilon 1e-5, untied output).
  static Config llama(int64_t n_vocab, int64_t n_embd, int64_t n_layer,
                      int64_t n_head, int64_t n_head_kv, int64_t n_ff,
                      int64_t n_ctx);
  // The general.* keys (architecture, `name`, file type) and the <arch>.*
  // keys from_gguf reads back as this Config, for a file whose matrices are
  // `weights`; the tokenizer.* keys are the caller's. The flags read from
  // tensors (tied_output, qkv_bias, rope_freqs) are the caller's tensors to
  // write.
  gguf::Metadata to_gguf(QuantType weights, const std::string& name) const;
};

// GGUF's general.file_type (llama_ftype) of a file whose 2-D weights are
// all `type` (ValueError for
// q8_K, which is not a type of weights).
uint32_t pure_file_type(QuantType type);

struct LoadOptions {
  // Context length (KV cache positions of each sequence); 0:
  // min(n_ctx_train, 4096).
  int64_t n_ctx = 0;
  // Sequence slots: independent KV caches of n_ctx positions each.
  int32_t n_seq = 1;
};

// Which positions forward() returns logits for.
enum class LogitsMode { last, all };

// One sequence's part of a batched step (Model::forward_batch).
struct SeqChunk {
  int32_t seq = 0;                  // The slot, in [0, n_seq).
  int64_t n_past = 0;               // Cached positions kept before `tokens`.
  std::span<const int32_t> tokens;  // At least one.
  // Logits of the last n_logits tokens: 0 none, 1 the next token's,
  // tokens.size() all (speculative verification).
  int64_t n_logits = 1;
};

class Model {
 public:
  virtual ~Model() = default;

  const Config& config() const { return config_; }
  // The file (tokenizer metadata: Tokenizer::from_gguf(file().metadata())).
  const gguf::Reader& file() const { return *file_; }
  Backend& backend() const { return *backend_; }
  // Positions of each sequence's cache.
  int64_t n_ctx() const { return n_ctx_; }
  int32_t n_seq() const { return int32_t(n_past_.size()); }
  // Positions currently held in a sequence's KV cache.
  int64_t n_past(int32_t seq = 0) const;

  // Runs `tokens` at positions n_past, n_past + 1, ... and stores their keys
  // and values in the cache; the cache is first truncated to n_past, which
  // must be at most this->n_past() (ValueError otherwise, or when the tokens
  // would not fit in n_ctx, or an id is outside [0, n_vocab)). All tokens go
  // through each layer together (batched prompt processing). Returns f32
  // logits [1, n_vocab] of the last token, or [tokens.size(), n_vocab] for
  // LogitsMode::all. Sequence 0's cache.
  Tensor forward(std::span<const int32_t> tokens, int64_t n_past,
                 LogitsMode mode = LogitsMode::last);
  // Several sequences in one step: each chunk's tokens go at positions
  // n_past, n_past + 1, ... of its own slot (truncated to n_past first), and
  // all tokens of all chunks share each weight matrix's pass (prompt chunks
  // of some sequences beside decode tokens of others). A slot sees only its
  // own keys. Returns f32 [sum of n_logits, n_vocab], chunk by chunk in
  // order (an undefined Tensor when that sum is 0). ValueError, before
  // anything changes, for a slot out of range or named twice, an n_past
  // beyond the slot's cache, tokens that do not fit n_ctx, an id outside
  // the vocabulary or n_logits outside [0, tokens.size()].
  virtual Tensor forward_batch(std::span<const SeqChunk> chunks) = 0;
  // Forgets every sequence's cache.
  void reset();
  // Keeps the first n positions of a sequence's cache (n <= n_past(seq)).
  void truncate(int64_t n, int32_t seq = 0);

 protected:
  Model(Config config, std::shared_ptr<const gguf::Reader> file,
        Backend& backend, int64_t n_ctx, int32_t n_seq)
      : config_(std::move(config)),
        file_(std::move(file)),
        backend_(&backend),
        n_ctx_(n_ctx),
        n_past_(size_t(n_seq), 0) {}

  Config config_;
  std::shared_ptr<const gguf::Reader> file_;
  Backend* backend_;
  int64_t n_ctx_ = 0;
  std::vector<int64_t> n_past_;  // Per sequence.
};

// Opens and maps the file, reads the Config and checks every tensor the
// model uses: present, of a type qmatmul computes with, of the shape the
// Config implies (FormatError naming the file and the tensor otherwise).
// IoError when the file cannot be read. The model runs where `backend`
// does; its tensors (logits included) live there.
std::shared_ptr<Model> load(const std::string& path, Backend& backend,
                            LoadOptions options = {});
std::shared_ptr<Model> load(std::shared_ptr<const gguf::Reader> file,
                            Backend& backend, LoadOptions options = {});

}  // namespace nascent::llama
