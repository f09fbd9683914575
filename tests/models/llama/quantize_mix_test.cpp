// The per-tensor types of llama.cpp's file types (the _S/_M/_L mixes, the
// legacy types and the float ones, with and without --pure) on five fake
// llama models, against llama.cpp's own choice (data/
// quantize_mix_vectors.inc): GQA, MQA and MHA, 4 to 32 layers, tied and
// untied output, and rows of 96 and 160 values that no k-quant block fits
// (the fallbacks).
//
// How the answers were made, once (the driver is not in the repository):
// vendor/llama.cpp/src/llama-quant.cpp of llama-cpp-python 0.3.36's source
// distribution (PyPI, the peer's version), its tensor_get_category,
// tensor_allows_quantization, tensor_type_fallback,
// llama_tensor_get_type[_impl], llama_ftype_get_default_type and
// init_quantize_state_counters copied unchanged into a C++ driver with
// stand-ins for llama_model (arch llama, n_head, n_head_kv, n_layer, no
// experts) and ggml's block sizes, walking the tensors in llama.cpp's
// weights_map order (layer, then name) as llama_model_quantize does.
#include <string>

#include <gtest/gtest.h>

#include "nascent/io/gguf.h"
#include "nascent/models/llama/quantize.h"

namespace nascent::test {
namespace {

struct MixVector {
  const char* model;
  uint32_t ftype;  // llama_ftype
  bool pure;
  const char* types;
};

#include "models/llama/data/quantize_mix_vectors.inc"

constexpr const char* kMixTypes[] = {"f32",  "f16",  "bf16", "q4_0", "q4_1",
                                     "q5_0", "q5_1", "q8_0", "q2_K", "q3_K",
                                     "q4_K", "q5_K", "q6_K"};

struct FakeModel {
  gguf::Metadata m;
  std::vector<gguf::TensorInfo> tensors;
};

// The tensors as make-model writes them (the driver used the same list).
FakeModel fake_model(int n_layer, int64_t dim, int64_t n_head, int64_t n_kv,
                     int64_t ffn, int64_t vocab, bool tied) {
  FakeModel f;
  f.m.set("general.architecture", gguf::Value("llama"));
  f.m.set("llama.block_count", gguf::Value(uint32_t(n_layer)));
  f.m.set("llama.attention.head_count", gguf::Value(uint32_t(n_head)));
  f.m.set("llama.attention.head_count_kv", gguf::Value(uint32_t(n_kv)));
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    f.tensors.push_back({std::move(name), std::move(shape), QuantType::f16});
  };
  const int64_t kv = dim / n_head * n_kv;
  add("token_embd.weight", {vocab, dim});
  f.tensors.back().type = QuantType::f32;
  for (int l = 0; l < n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {dim});
    add(p + "attn_q.weight", {dim, dim});
    add(p + "attn_k.weight", {kv, dim});
    add(p + "attn_v.weight", {kv, dim});
    add(p + "attn_output.weight", {dim, dim});
    add(p + "ffn_norm.weight", {dim});
    add(p + "ffn_gate.weight", {ffn, dim});
    add(p + "ffn_up.weight", {ffn, dim});
    add(p + "ffn_down.weight", {dim, ffn});
  }
  add("output_norm.weight", {dim});
  if (!tied) add("output.weight", {vocab, dim});
  return f;
}

FakeModel model_named(const std::string& name) {
  if (name == "gqa4-16") return fake_model(16, 512, 8, 2, 1536, 1000, false);
  if (name == "mqa-32") return fake_model(32, 256, 4, 1, 768, 512, false);
  if (name == "mha-tied-4") return fake_model(4, 512, 8, 8, 1536, 1000, true);
  if (name == "odd96-8") return fake_model(8, 96, 6, 2, 288, 333, false);
  if (name == "odd160-5") return fake_model(5, 160, 5, 1, 480, 300, true);
  throw std::runtime_error("unknown model " + name);
}

TEST(QuantizeMix, EveryFileTypeChoosesAsLlamaCpp) {
  int checked = 0;
  for (const MixVector& v : kMixVectors) {
    const FakeModel f = model_named(v.model);
    const std::string types = v.types;
    ASSERT_EQ(types.size(), f.tensors.size()) << v.model;
    llama::QuantizeOptions o;
    o.type = llama::FileType(v.ftype);
    o.pure = v.pure;
    const std::string what = std::string(v.model) + " " + llama::name(o.type) +
                             (v.pure ? " --pure" : "");
    std::vector<llama::TensorPlan> plan;
    try {
      plan = llama::plan_quantization(f.m, f.tensors, o);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
      continue;
    }
    ASSERT_EQ(plan.size(), types.size()) << what;
    int wrong = 0;
    for (size_t i = 0; i < plan.size() && wrong < 3; ++i) {
      const char* want = kMixTypes[types[i] - 'a'];
      if (std::string(name(plan[i].to)) != want) {
        ++wrong;
        ADD_FAILURE() << what << ": " << plan[i].name << " is "
                      << name(plan[i].to) << ", llama.cpp chooses " << want;
      }
    }
    ++checked;
  }
  // 5 models x 17 file types x (mix, --pure).
  EXPECT_EQ(checked, 170);
}

}  // namespace
}  // namespace nascent::test
