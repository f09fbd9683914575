// llama.cpp's vocab-only GGUF files as real-world inputs: the reader gets
// their metadata right, and writing what it read gives the same bytes.
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"
#include "tests/shared_data.h"

namespace nascent::test {
namespace {

void expect_rewrite_is_identical(const gguf::Reader& r) {
  gguf::Writer w;
  w.metadata() = r.metadata();
  std::string path = ::testing::TempDir() + "nascent_vocab_" +
                     std::to_string(::getpid()) + ".gguf";
  w.write(path);
  auto copy = io::MappedFile::open(path);
  ASSERT_EQ(copy->size(), r.file_size());
  EXPECT_EQ(
      std::memcmp(copy->bytes().data(), r.file()->bytes().data(), copy->size()),
      0);
  std::remove(path.c_str());
}

TEST(GgufVocabFiles, LlamaSpm) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-llama-spm.gguf");
  gguf::Reader r(path);
  EXPECT_EQ(r.version(), 3u);
  EXPECT_TRUE(r.tensors().empty());
  const gguf::Metadata& m = r.metadata();
  EXPECT_EQ(m.size(), 22u);
  EXPECT_EQ(m.entries().front().first, "general.architecture");
  EXPECT_EQ(m.get_string("general.architecture"), "llama");
  EXPECT_EQ(m.get_int("llama.context_length"), 4096);
  EXPECT_EQ(m.at("llama.block_count").type(), gguf::ValueType::u32);
  EXPECT_FLOAT_EQ(float(m.get_double("llama.attention.layer_norm_rms_epsilon")),
                  1e-5f);
  EXPECT_EQ(m.get_string("tokenizer.ggml.model"), "llama");
  const auto& tokens = m.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[13], "<0x0A>");
  EXPECT_EQ(tokens[29871], "\xe2\x96\x81");  // "▁", the SentencePiece space.
  const auto& scores = m.get_array<float>("tokenizer.ggml.scores");
  ASSERT_EQ(scores.size(), 32000u);
  const auto& types = m.get_array<int32_t>("tokenizer.ggml.token_type");
  EXPECT_EQ(types[0], 2);  // unknown
  EXPECT_EQ(types[1], 3);  // control
  EXPECT_EQ(types[3], 6);  // byte
  EXPECT_EQ(m.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(m.get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_TRUE(m.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(m.get_bool("tokenizer.ggml.add_eos_token"));
  expect_rewrite_is_identical(r);
}

TEST(GgufVocabFiles, Gpt2) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-gpt-2.gguf");
  gguf::Reader r(path);
  EXPECT_EQ(r.version(), 3u);
  const gguf::Metadata& m = r.metadata();
  EXPECT_EQ(m.size(), 16u);
  EXPECT_EQ(m.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(m.get_string("tokenizer.ggml.pre"), "gpt-2");
  const auto& tokens = m.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 50257u);
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[50256], "<|endoftext|>");
  const auto& merges = m.get_array<std::string>("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), 50000u);
  EXPECT_EQ(merges[0], "\xc4\xa0 t");  // "Ġ t"
  EXPECT_EQ(merges[6], "\xc4\xa0t he");
  EXPECT_EQ(m.get_int("tokenizer.ggml.eos_token_id"), 50256);
  EXPECT_FALSE(m.contains("tokenizer.ggml.scores"));
  expect_rewrite_is_identical(r);
}

}  // namespace
}  // namespace nascent::test
