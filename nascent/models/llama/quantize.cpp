#include "nascent/models/llama/quantize.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"

namespace nascent::llama {
namespace {

struct FileTypeName {
  const char* name;
  FileType type;
};
// llama-quantize's table; the aliases come after the canonical names.
constexpr FileTypeName kFileTypes[] = {
    {"F32", FileType::all_f32},   {"F16", FileType::f16},
    {"BF16", FileType::bf16},     {"Q4_0", FileType::q4_0},
    {"Q4_1", FileType::q4_1},     {"Q5_0", FileType::q5_0},
    {"Q5_1", FileType::q5_1},     {"Q8_0", FileType::q8_0},
    {"Q2_K", FileType::q2_k},     {"Q3_K_S", FileType::q3_k_s},
    {"Q3_K_M", FileType::q3_k_m}, {"Q3_K_L", FileType::q3_k_l},
    {"Q4_K_S", FileType::q4_k_s}, {"Q4_K_M", FileType::q4_k_m},
    {"Q5_K_S", FileType::q5_k_s}, {"Q5_K_M", FileType::q5_k_m},
    {"Q6_K", FileType::q6_k},     {"Q3_K", FileType::q3_k_m},
    {"Q4_K", FileType::q4_k_m},   {"Q5_K", FileType::q5_k_m},
};
constexpr size_t kNumCanonical = 17;

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

bool is_float_type(QuantType t) {
  return t == QuantType::f32 || t == QuantType::f16 || t == QuantType::bf16;
}

// ggml_n_dims: the axes up to the last that is not 1 (ggml's order).
int ggml_dims(const std::vector<int64_t>& shape) {
  int n = int(shape.size());
  int first = 0;
  while (first + 1 < n && shape[size_t(first)] == 1) ++first;
  return n - first;
}

// The layer of "blk.N.*", -1 otherwise.
int layer_of(const std::string& name) {
  int layer = -1;
  if (name.rfind("blk.", 0) == 0) {
    if (std::sscanf(name.c_str() + 4, "%d", &layer) != 1) layer = -1;
  }
  return layer;
}

// llama_model_quantize's test of which tensors are quantized at all.
bool quantizable(const gguf::TensorInfo& t) {
  const std::string& n = t.name;
  return n.size() >= 6 && n.compare(n.size() - 6, 6, "weight") == 0 &&
         ggml_dims(t.shape) >= 2 && !contains(n, "_norm.weight") &&
         !contains(n, "ffn_gate_inp.weight") && n != "position_embd.weight" &&
         n != "token_types.weight";
}

// The state llama_tensor_get_type keeps while it walks the tensors.
struct RuleState {
  FileType ftype;
  const QuantizeOptions* options;
  int n_layer = 0;
  int n_attention_wv = 0;
  int64_t n_gqa = 1;
  bool is_70b = false;
  bool has_output = false;
  int i_attention_wv = 0;
  int i_ffn_down = 0;
};

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 ||
         (i_layer - n_layers / 8) % 3 == 2;
}

// llama.cpp's tensor_type_fallback (applied with --pure too): rows that
// are not whole blocks of `type` take a type of 32-value blocks, or f16
// when those do not fit either.
QuantType fallback_type(const gguf::TensorInfo& t, QuantType type,
                        bool& fallback) {
  using Q = QuantType;
  const int64_t nx = t.shape.back();
  if (nx % block_size(type) == 0) return type;
  fallback = true;
  switch (type) {
    case Q::q2_k:
    case Q::q3_k:
      type = Q::q4_0;
      break;
    case Q::q4_k:
      type = Q::q5_0;
      break;
    case Q::q5_k:
      type = Q::q5_1;
      break;
    case Q::q6_k:
      type = Q::q8_0;
      break;
    default:  // Already 32-value blocks: nothing smaller but f16.
      break;
  }
  return nx % block_size(type) == 0 ? type : Q::f16;
}

QuantType rule_type(RuleState& s, const gguf::TensorInfo& t, QuantType type,
                    bool& fallback) {
  using Q = QuantType;
  using F = FileType;
  const std::string& n = t.name;
  const F f = s.ftype;
  const int64_t nx = t.shape.back();
  if (n == "output.weight" || (!s.has_output && n == "token_embd.weight")) {
    if (s.options->output_type) {
      type = *s.options->output_type;
    } else if (nx % block_size(type) != 0) {
      type = Q::q8_0;
    } else if (type != Q::q8_0) {
      type = Q::q6_k;
    }
  } else if (n == "token_embd.weight") {
    if (s.options->token_embedding_type) {
      type = *s.options->token_embedding_type;
    }
  } else if (contains(n, "attn_v.weight")) {
    if (f == F::q2_k) {
      type = s.n_gqa >= 4 ? Q::q4_k : Q::q3_k;
    } else if (f == F::q3_k_m) {
      type = s.i_attention_wv < 2 ? Q::q5_k : Q::q4_k;
    } else if (f == F::q3_k_l) {
      type = Q::q5_k;
    } else if ((f == F::q4_k_m || f == F::q5_k_m) &&
               use_more_bits(s.i_attention_wv, s.n_attention_wv)) {
      type = Q::q6_k;
    } else if (f == F::q4_k_s && s.i_attention_wv < 4) {
      type = Q::q5_k;
    }
    // 70B: eight heads share each attn_v, so more bits cost little.
    if (s.is_70b && (type == Q::q3_k || type == Q::q4_k)) type = Q::q5_k;
    ++s.i_attention_wv;
  } else if (contains(n, "ffn_down")) {
    int i = s.i_ffn_down, nl = s.n_layer;
    if (f == F::q2_k) {
      type = Q::q3_k;
    } else if (f == F::q3_k_m) {
      type = i < nl / 16 ? Q::q5_k : Q::q4_k;
    } else if (f == F::q3_k_l) {
      type = Q::q5_k;
    } else if (f == F::q4_k_m) {
      if (use_more_bits(i, nl)) type = Q::q6_k;
    } else if (f == F::q5_k_m && use_more_bits(i, nl)) {
      type = Q::q6_k;
    } else if (f == F::q4_k_s && i < nl / 8) {
      type = Q::q5_k;
    }
    ++s.i_ffn_down;
  } else if (contains(n, "attn_output.weight")) {
    if (f == F::q2_k) type = Q::q3_k;
    if (f == F::q3_k_m) type = Q::q4_k;
    if (f == F::q3_k_l) type = Q::q5_k;
  } else if (contains(n, "attn_qkv.weight")) {
    if (f == F::q3_k_m || f == F::q3_k_l) type = Q::q4_k;
    if (f == F::q4_k_m) type = Q::q5_k;
    if (f == F::q5_k_m) type = Q::q6_k;
  }
  return fallback_type(t, type, fallback);
}

}  // namespace

std::optional<FileType> file_type_from_name(std::string_view name) {
  for (const auto& f : kFileTypes) {
    if (same_name(name, f.name)) return f.type;
  }
  return std::nullopt;
}

const char* name(FileType type) {
  for (size_t i = 0; i < kNumCanonical; ++i) {
    if (kFileTypes[i].type == type) return kFileTypes[i].name;
  }
  return "unknown";
}

std::string file_type_names() {
  std::string out;
  for (const auto& f : kFileTypes) {
    if (!out.empty()) out += ", ";
    for (const char* c = f.name; *c; ++c) {
      out += char(std::tolower(static_cast<unsigned char>(*c)));
    }
  }
  return out;
}

QuantType default_type(FileType type) {
  switch (type) {
    case FileType::all_f32:
      return QuantType::f32;
    case FileType::f16:
      return QuantType::f16;
    case FileType::bf16:
      return QuantType::bf16;
    case FileType::q4_0:
      return QuantType::q4_0;
    case FileType::q4_1:
      return QuantType::q4_1;
    case FileType::q5_0:
      return QuantType::q5_0;
    case FileType::q5_1:
      return QuantType::q5_1;
    case FileType::q8_0:
      return QuantType::q8_0;
    case FileType::q2_k:
      return QuantType::q2_k;
    case FileType::q3_k_s:
    case FileType::q3_k_m:
    case FileType::q3_k_l:
      return QuantType::q3_k;
    case FileType::q4_k_s:
    case FileType::q4_k_m:
      return QuantType::q4_k;
    case FileType::q5_k_s:
    case FileType::q5_k_m:
      return QuantType::q5_k;
    case FileType::q6_k:
      return QuantType::q6_k;
  }
  throw ValueError(
      fmt::format("quantize: file type {} is not known", uint32_t(type)));
}

std::vector<TensorPlan> plan_quantization(
    const gguf::Metadata& m, const std::vector<gguf::TensorInfo>& tensors,
    const QuantizeOptions& options) {
  const std::string& arch = m.get_string("general.architecture");
  RuleState s{options.type, &options};
  s.n_layer = int(m.get_int(arch + ".block_count"));
  int64_t n_head = m.get_int(arch + ".attention.head_count");
  int64_t n_head_kv =
      m.find_int(arch + ".attention.head_count_kv").value_or(n_head);
  s.n_gqa = n_head_kv > 0 ? n_head / n_head_kv : 1;
  s.is_70b = arch == "llama" && s.n_layer == 80 && n_head != n_head_kv;
  for (const auto& t : tensors) {
    if (contains(t.name, "attn_v.weight") ||
        contains(t.name, "attn_qkv.weight"))
      ++s.n_attention_wv;
    if (t.name == "output.weight") s.has_output = true;
  }
  // llama.cpp visits the tensors by layer, then by name: the layer counters
  // of the mixes count in that order.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  const QuantType base = default_type(options.type);
  std::vector<TensorPlan> plan(tensors.size());
  for (size_t i : order) {
    const gguf::TensorInfo& t = tensors[i];
    TensorPlan& p = plan[i];
    p = {t.name, t.shape, t.type, t.type, false};
    if (!quantizable(t)) continue;
    QuantType to = base;
    if (!is_float_type(base)) {
      to = options.pure ? fallback_type(t, base, p.fallback)
                        : rule_type(s, t, base, p.fallback);
    }
    if (options.token_embedding_type && t.name == "token_embd.weight") {
      to = *options.token_embedding_type;
    }
    if (options.output_type && t.name == "output.weight") {
      to = *options.output_type;
    }
    if (t.shape.back() % block_size(to) != 0) {
      throw ValueError(fmt::format(
          "quantize: {} has rows of {} values, not whole {} blocks of {}",
          t.name, t.shape.back(), name(to), block_size(to)));
    }
    if (to != t.type && !is_float_type(t.type) && !options.allow_requantize) {
      throw ValueError(fmt::format(
          "quantize: {} is already {}; requantizing loses accuracy and needs "
          "--allow-requantize",
          t.name, name(t.type)));
    }
    p.to = to;
  }
  return plan;
}

QuantizeResult quantize_model(const std::string& in, const std::string& out,
                              const QuantizeOptions& options) {
  gguf::Reader r(in);
  QuantizeResult result;
  result.plan = plan_quantization(r.metadata(), r.tensors(), options);
  gguf::Writer w;
  w.metadata() = r.metadata();
  w.metadata().set("general.quantization_version", gguf::Value(uint32_t(2)));
  w.metadata().set("general.file_type", gguf::Value(uint32_t(options.type)));
  for (size_t i = 0; i < result.plan.size(); ++i) {
    const TensorPlan& p = result.plan[i];
    std::span<const std::byte> src = r.tensor_data(r.tensors()[i]);
    result.bytes_in += src.size();
    result.bytes_out += gguf::tensor_bytes(p.to, p.shape, p.name);
    auto produce = [&p, src](std::span<std::byte> dst) {
      if (p.to == p.from) {
        std::memcpy(dst.data(), src.data(), src.size());
        return;
      }
      // Decoded and encoded by ops of the default backend, in pieces of 16
      // Mi values, reading the file's bytes in place where it can.
      Backend& backend = default_backend();
      const int64_t cols = p.shape.back();
      const int64_t in_stride = int64_t(row_bytes(p.from, cols));
      const int64_t out_stride = int64_t(row_bytes(p.to, cols));
      const int64_t rows = int64_t(src.size()) / in_stride;
      const Tensor weights = Tensor::make(
          {rows, in_stride}, {in_stride, 1}, 0, DType::u8, backend,
          backend.wrap(
              std::shared_ptr<const void>(src.data(), [](const void*) {}),
              src.data(), src.size()));
      const int64_t piece =
          std::max<int64_t>(1, (int64_t(1) << 24) / std::max<int64_t>(cols, 1));
      for (int64_t r0 = 0; r0 < rows; r0 += piece) {
        const int64_t n = std::min(piece, rows - r0);
        const Tensor q =
            quantize(dequantize(weights.narrow(0, r0, n), p.from), p.to);
        const HostBytes host = backend.materialize(q);
        std::memcpy(dst.data() + r0 * out_stride, host.data + q.offset(),
                    size_t(n * out_stride));
      }
    };
    w.add_tensor(p.name, p.shape, p.to, produce);
  }
  w.write(out);
  return result;
}

}  // namespace nascent::llama
