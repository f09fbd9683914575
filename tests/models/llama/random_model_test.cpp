// The random-weight LLaMA writer: metadata llama.cpp needs, tensor names and
// shapes, weight statistics, determinism across seeds and thread counts, the
// synthetic vocabulary, and argument errors.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "models/llama/gguf_floats.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/models/llama/random_model.h"
#include "nascent/quant/codec.h"
#include "nascent/tokenizer/tokenizer.h"
#include "shared_data.h"

namespace nascent::test {
namespace {

using llama::RandomModelConfig;
using testing::expect_error;

RandomModelConfig gqa_config() {
  RandomModelConfig c;
  c.n_embd = 96;
  c.n_layer = 3;
  c.n_head = 6;
  c.n_head_kv = 2;
  c.n_ff = 200;
  c.n_vocab = 333;
  c.n_ctx = 128;
  c.seed = 7;
  return c;
}

using testing::floats;

TEST(RandomModel, MetadataAndTensorsAreWhatLlamaCppLoads) {
  testing::TempDir dir;
  RandomModelConfig c = gqa_config();
  llama::write_random_model(c, dir.file("m.gguf"));
  gguf::Reader r(dir.file("m.gguf"));
  const gguf::Metadata& m = r.metadata();
  EXPECT_EQ(m.get_string("general.architecture"), "llama");
  EXPECT_EQ(m.get_int("general.file_type"), 0);
  EXPECT_EQ(m.get_int("llama.embedding_length"), 96);
  EXPECT_EQ(m.get_int("llama.block_count"), 3);
  EXPECT_EQ(m.get_int("llama.attention.head_count"), 6);
  EXPECT_EQ(m.get_int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(m.get_int("llama.feed_forward_length"), 200);
  EXPECT_EQ(m.get_int("llama.context_length"), 128);
  EXPECT_EQ(m.get_int("llama.rope.dimension_count"), 16);
  EXPECT_EQ(m.get_int("llama.vocab_size"), 333);
  EXPECT_FLOAT_EQ(float(m.get_double("llama.rope.freq_base")), 10000.0f);
  EXPECT_EQ(m.get_string("tokenizer.ggml.model"), "llama");
  // 1 embedding, 9 per layer, output norm and output.
  ASSERT_EQ(r.tensors().size(), size_t(1 + 9 * 3 + 2));
  EXPECT_EQ(r.tensor("token_embd.weight").shape,
            (std::vector<int64_t>{333, 96}));
  EXPECT_EQ(r.tensor("blk.2.attn_q.weight").shape,
            (std::vector<int64_t>{96, 96}));
  EXPECT_EQ(r.tensor("blk.2.attn_k.weight").shape,
            (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(r.tensor("blk.1.attn_v.weight").shape,
            (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(r.tensor("blk.0.ffn_gate.weight").shape,
            (std::vector<int64_t>{200, 96}));
  EXPECT_EQ(r.tensor("blk.0.ffn_down.weight").shape,
            (std::vector<int64_t>{96, 200}));
  EXPECT_EQ(r.tensor("blk.0.ffn_norm.weight").shape,
            (std::vector<int64_t>{96}));
  EXPECT_EQ(r.tensor("output.weight").shape, (std::vector<int64_t>{333, 96}));
  EXPECT_NE(r.find_tensor("output_norm.weight"), nullptr);

  c.tied_output = true;
  llama::write_random_model(c, dir.file("tied.gguf"));
  EXPECT_EQ(gguf::Reader(dir.file("tied.gguf")).find_tensor("output.weight"),
            nullptr);
}

TEST(RandomModel, WeightsHaveUnitFanInScale) {
  testing::TempDir dir;
  RandomModelConfig c = gqa_config();
  llama::write_random_model(c, dir.file("m.gguf"));
  gguf::Reader r(dir.file("m.gguf"));
  for (const auto& t : r.tensors()) {
    std::vector<float> v = floats(r, t);
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += double(x) * x;
    double mean = sum / double(v.size());
    double sd = std::sqrt(sq / double(v.size()) - mean * mean);
    if (t.shape.size() == 1) {
      EXPECT_NEAR(mean, 1.0, 0.04) << t.name;
      EXPECT_NEAR(sd, 0.1, 0.03) << t.name;
    } else {
      double want = 1.0 / std::sqrt(double(t.shape.back()));
      EXPECT_NEAR(mean, 0.0, 0.1 * want) << t.name;
      EXPECT_NEAR(sd / want, 1.0, 0.06) << t.name;
    }
  }
}

TEST(RandomModel, SameSeedSameFileWhateverTheThreads) {
  testing::TempDir dir;
  RandomModelConfig c = gqa_config();
  int threads = cpu::num_threads();
  cpu::set_num_threads(1);
  llama::write_random_model(c, dir.file("a.gguf"));
  cpu::set_num_threads(std::max(2, threads));
  llama::write_random_model(c, dir.file("b.gguf"));
  c.seed = 8;
  llama::write_random_model(c, dir.file("c.gguf"));
  cpu::set_num_threads(threads);
  auto a = testing::read_bytes(dir.file("a.gguf"));
  EXPECT_EQ(a, testing::read_bytes(dir.file("b.gguf")));
  EXPECT_NE(a, testing::read_bytes(dir.file("c.gguf")));
}

TEST(RandomModel, QuantizedWeightsAreTheF32OnesQuantized) {
  testing::TempDir dir;
  RandomModelConfig c = gqa_config();
  c.n_embd = 64;
  c.n_head = 4;
  c.n_ff = 128;
  llama::write_random_model(c, dir.file("f32.gguf"));
  for (QuantType type :
       {QuantType::f16, QuantType::bf16, QuantType::q8_0, QuantType::q4_0}) {
    c.type = type;
    llama::write_random_model(c, dir.file("q.gguf"));
    gguf::Reader f(dir.file("f32.gguf")), q(dir.file("q.gguf"));
    EXPECT_EQ(q.metadata().get_int("general.file_type"),
              int64_t(llama::pure_file_type(type)));
    for (const auto& t : f.tensors()) {
      const gguf::TensorInfo& tq = q.tensor(t.name);
      EXPECT_EQ(tq.type, t.shape.size() == 1 ? QuantType::f32 : type);
      std::vector<float> x = floats(f, t);
      std::vector<uint8_t> bytes(row_bytes(tq.type, t.numel()));
      quant::quantize_row(tq.type, x.data(), bytes.data(), t.numel());
      auto got = q.tensor_data(tq);
      ASSERT_EQ(got.size(), bytes.size());
      EXPECT_EQ(std::memcmp(got.data(), bytes.data(), bytes.size()), 0)
          << t.name << " " << name(type);
    }
  }
}

TEST(RandomModel, SyntheticVocabularyTokenizes) {
  gguf::Metadata m = llama::synthetic_spm_vocab(333);
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(m);
  EXPECT_EQ(t.size(), 333u);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  std::string text = "hello world the rain, \xc3\xa9t\xc3\xa9 42!";
  std::vector<tokenizer::TokenId> ids = t.encode(text, false, false);
  EXPECT_LT(ids.size(), text.size());  // Pieces merged, not only bytes.
  EXPECT_EQ(t.decode(ids), text);
}

TEST(RandomModel, CopiesAVocabularyFile) {
  NASCENT_SHARED_FILE_OR_SKIP(vocab, "tokenizer/ggml-vocab-llama-spm.gguf");
  testing::TempDir dir;
  RandomModelConfig c = gqa_config();
  c.n_layer = 1;
  c.vocab_file = vocab;
  llama::write_random_model(c, dir.file("m.gguf"));
  gguf::Reader r(dir.file("m.gguf")), v(vocab);
  EXPECT_EQ(r.metadata().get_int("llama.vocab_size"), 32000);
  EXPECT_EQ(r.tensor("output.weight").shape, (std::vector<int64_t>{32000, 96}));
  for (const auto& [key, value] : v.metadata().entries()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      EXPECT_EQ(r.metadata().at(key), value) << key;
    }
  }
}

TEST(RandomModel, BadConfigsAreValueErrors) {
  testing::TempDir dir;
  std::string path = dir.file("bad.gguf");
  RandomModelConfig c = gqa_config();
  c.n_vocab = 299;
  expect_error<ValueError>([&] { llama::write_random_model(c, path); },
                           {"n_vocab 299", "300"});
  c = gqa_config();
  c.n_head = 5;
  expect_error<ValueError>([&] { llama::write_random_model(c, path); },
                           {"n_embd 96", "n_head 5"});
  c = gqa_config();
  c.n_head_kv = 4;
  expect_error<ValueError>([&] { llama::write_random_model(c, path); },
                           {"n_head 6", "n_head_kv 4"});
  c = gqa_config();
  c.n_layer = 0;
  expect_error<ValueError>([&] { llama::write_random_model(c, path); },
                           {"n_layer", "positive"});
  c = gqa_config();
  c.type = QuantType::q4_k;  // Rows of 96 are no q4_K blocks.
  expect_error<ValueError>([&] { llama::write_random_model(c, path); },
                           {"token_embd.weight", "96", "q4_K"});
  EXPECT_TRUE(dir.entries().empty());  // Nothing half-written.
}

}  // namespace
}  // namespace nascent::test
