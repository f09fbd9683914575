// Tokenizer behaviour on small hand-made vocabularies (every expected id
// worked out by hand from the merge rules), on llama.cpp's vocab files, and
// the errors of malformed tokenizer metadata.
#include <gtest/gtest.h>

#include "nascent/tokenizer/tokenizer.h"
#include "tests/shared_data.h"

namespace nascent::test {
namespace {

using gguf::Value;

const std::string kSp = "\xe2\x96\x81";  // "▁"

struct VocabSpec {
  std::string model;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

gguf::Metadata metadata(const VocabSpec& spec) {
  gguf::Metadata m("test.gguf");
  m.set("tokenizer.ggml.model", Value(spec.model));
  m.set("tokenizer.ggml.tokens", Value::array(spec.tokens));
  if (!spec.scores.empty()) {
    m.set("tokenizer.ggml.scores", Value::array(spec.scores));
  }
  if (!spec.types.empty()) {
    m.set("tokenizer.ggml.token_type", Value::array(spec.types));
  }
  if (spec.model == "gpt2") {
    m.set("tokenizer.ggml.pre", Value("gpt-2"));
    m.set("tokenizer.ggml.merges", Value::array(spec.merges));
  }
  return m;
}

// <unk> <s> </s>, then pieces; types: unknown, control, control, normal.
// Bytes C3 and A9 have fallback tokens.
VocabSpec spm_spec(float score_sp_a, float score_ab) {
  VocabSpec s;
  s.model = "llama";
  s.tokens = {"<unk>",   "<s>", "</s>",   kSp,      "a",       "b",
              kSp + "a", "ab",  "<0xC3>", "<0xA9>", "<|user|>"};
  s.scores = {0, 0, 0, -5, -3, -3, score_sp_a, score_ab, 0, 0, 0};
  s.types = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 4};
  return s;
}

TEST(TokenizerSpm, HigherScoreMergesFirst) {
  // "ab" becomes "▁ab": pairs "▁a" and "ab" compete, "▁ab" is no token.
  tokenizer::Tokenizer first_sp_a =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-1, -2)));
  EXPECT_EQ(first_sp_a.encode("ab", false),
            (std::vector<tokenizer::TokenId>{6, 5}));
  tokenizer::Tokenizer first_ab =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-2, -1)));
  EXPECT_EQ(first_ab.encode("ab", false),
            (std::vector<tokenizer::TokenId>{3, 7}));
  // A tie goes to the leftmost pair.
  tokenizer::Tokenizer tie =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-1, -1)));
  EXPECT_EQ(tie.encode("ab", false), (std::vector<tokenizer::TokenId>{6, 5}));
}

TEST(TokenizerSpm, BosSpacePrefixAndByteFallback) {
  tokenizer::Tokenizer t =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-1, -2)));
  EXPECT_EQ(t.model(), tokenizer::TokenizerModel::spm);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.unk(), 0);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  EXPECT_TRUE(t.add_space_prefix());
  EXPECT_EQ(t.encode("a"), (std::vector<tokenizer::TokenId>{1, 6}));
  EXPECT_TRUE(t.encode("", false).empty());
  EXPECT_EQ(t.encode(""), (std::vector<tokenizer::TokenId>{1}));
  // "é" has no token: its two bytes do; "x" has neither, so it is <unk>.
  EXPECT_EQ(t.encode("\xc3\xa9", false),
            (std::vector<tokenizer::TokenId>{3, 8, 9}));
  EXPECT_EQ(t.encode("x", false), (std::vector<tokenizer::TokenId>{3, 0}));
}

TEST(TokenizerSpm, SpecialTokensInText) {
  tokenizer::Tokenizer t =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-1, -2)));
  // Control tokens are text unless parse_special; the text after one gets
  // the space prefix again.
  EXPECT_EQ(t.encode("<s>a", false, true),
            (std::vector<tokenizer::TokenId>{1, 6}));
  std::vector<tokenizer::TokenId> literal = t.encode("<s>", false, false);
  EXPECT_EQ(literal.front(), 3);  // "▁" then the characters as <unk>.
  EXPECT_EQ(literal.size(), 4u);
  // User-defined tokens are always cut out.
  EXPECT_EQ(t.encode("a<|user|>a", false, false),
            (std::vector<tokenizer::TokenId>{6, 10, 6}));
}

TEST(TokenizerSpm, Decode) {
  tokenizer::Tokenizer t =
      tokenizer::Tokenizer::from_gguf(metadata(spm_spec(-1, -2)));
  EXPECT_EQ(t.token_to_piece(6), " a");
  EXPECT_EQ(t.token_to_piece(8), "\xc3");
  EXPECT_EQ(t.token_to_piece(1), "");
  EXPECT_EQ(t.token_to_piece(1, true), "<s>");
  EXPECT_EQ(t.token_to_piece(10), "<|user|>");
  // The space the encoder added goes from the first piece. As in
  // llama.cpp, a leading BOS takes that place (its piece is empty), so the
  // space stays, also when remove_special drops the BOS.
  std::vector<tokenizer::TokenId> ids = t.encode("a \xc3\xa9", false);
  EXPECT_EQ(t.decode(ids), "a \xc3\xa9");
  ids.insert(ids.begin(), t.bos());
  EXPECT_EQ(t.decode(ids), " a \xc3\xa9");
  EXPECT_EQ(t.decode(ids, true), " a \xc3\xa9");
  EXPECT_EQ(t.decode(ids, false, true), "<s> a \xc3\xa9");
  EXPECT_THROW(t.token_to_piece(11), ValueError);
  EXPECT_THROW(t.token_to_piece(-1), ValueError);
}

// Byte-level BPE: "Ġ" (U+0120) is the space.
VocabSpec bpe_spec() {
  VocabSpec s;
  s.model = "gpt2";
  s.tokens = {"a",
              "b",
              "c",
              "\xc4\xa0",
              "ab",
              "bc",
              "abc",
              "\xc4\xa0"
              "a",
              "<|endoftext|>",
              ",",
              "'",
              "s"};
  s.merges = {"b c", "a b", "ab c", "\xc4\xa0 a"};
  s.types = {1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1};
  return s;
}

TEST(TokenizerBpe, LowestRankMergesFirst) {
  tokenizer::Tokenizer t =
      tokenizer::Tokenizer::from_gguf(metadata(bpe_spec()));
  EXPECT_EQ(t.model(), tokenizer::TokenizerModel::bpe);
  EXPECT_EQ(t.pre_tokenizer(), tokenizer::PreTokenizer::gpt2);
  EXPECT_FALSE(t.add_bos());
  // "b c" (rank 0) beats "a b" (rank 1); then no "a bc" merge exists.
  EXPECT_EQ(t.encode("abc"), (std::vector<tokenizer::TokenId>{0, 5}));
  // " a" is one word with the space: "Ġ a" merges.
  EXPECT_EQ(t.encode("ab a"), (std::vector<tokenizer::TokenId>{4, 7}));
  // Characters without a token are dropped, as llama.cpp does.
  EXPECT_EQ(t.encode("axb"), (std::vector<tokenizer::TokenId>{0, 1}));
}

TEST(TokenizerBpe, Llama3TakesWholeWordsAndAddsBos) {
  gguf::Metadata m = metadata(bpe_spec());
  m.set("tokenizer.ggml.pre", Value("llama-bpe"));
  m.set("tokenizer.ggml.bos_token_id", Value(uint32_t(8)));
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(m);
  EXPECT_EQ(t.pre_tokenizer(), tokenizer::PreTokenizer::llama3);
  EXPECT_TRUE(t.add_bos());
  // "abc" is a token: taken whole although the merges would not get there.
  EXPECT_EQ(t.encode("abc"), (std::vector<tokenizer::TokenId>{8, 6}));
  m.set("tokenizer.ggml.add_bos_token", Value(false));
  EXPECT_EQ(tokenizer::Tokenizer::from_gguf(m).encode("abc"),
            (std::vector<tokenizer::TokenId>{6}));
}

TEST(TokenizerBpe, EndOfGenerationAndDecode) {
  gguf::Metadata m = metadata(bpe_spec());
  // Without the key, llama.cpp's default EOS of gpt2 vocabularies is 11.
  EXPECT_EQ(tokenizer::Tokenizer::from_gguf(m).eos(), 11);
  m.set("tokenizer.ggml.eos_token_id", Value(uint32_t(8)));
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(m);
  // "<|endoftext|>" is found by its text as the end-of-turn token.
  EXPECT_EQ(t.eot(), 8);
  EXPECT_TRUE(t.is_eog(8));
  EXPECT_FALSE(t.is_eog(0));
  EXPECT_EQ(t.eog_tokens(), (std::vector<tokenizer::TokenId>{8}));
  EXPECT_EQ(t.encode("a<|endoftext|>", false, true),
            (std::vector<tokenizer::TokenId>{0, 8}));
  EXPECT_EQ(t.token_to_piece(7), " a");
  EXPECT_EQ(t.decode(std::vector<tokenizer::TokenId>{0, 8, 1}), "ab");
  EXPECT_EQ(t.decode(std::vector<tokenizer::TokenId>{0, 8, 1}, false, true),
            "a<|endoftext|>b");
  // Spaces before punctuation and contractions are tidied.
  EXPECT_EQ(t.decode(t.encode("a , a 's")), "a, a's");
}

void expect_format_error(const gguf::Metadata& m, const std::string& what) {
  try {
    tokenizer::Tokenizer::from_gguf(m);
    ADD_FAILURE() << "expected: " << what;
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("test.gguf: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, MalformedMetadata) {
  gguf::Metadata m = metadata(spm_spec(-1, -2));
  m.set("tokenizer.ggml.model", Value("t5"));
  expect_format_error(m, "tokenizer.ggml.model 't5' is not supported");

  m = metadata(spm_spec(-1, -2));
  m.erase("tokenizer.ggml.tokens");
  expect_format_error(m, "metadata key 'tokenizer.ggml.tokens' is missing");

  m = metadata(spm_spec(-1, -2));
  m.set("tokenizer.ggml.scores", Value::array(std::vector<float>{0, 1}));
  expect_format_error(m, "tokenizer.ggml.scores has 2 entries for 11 tokens");

  m = metadata(spm_spec(-1, -2));
  m.set("tokenizer.ggml.token_type", Value::array(std::vector<float>(11)));
  expect_format_error(m, "expected an array of i32, found an array of f32");

  VocabSpec bad_byte = spm_spec(-1, -2);
  bad_byte.tokens[8] = "<0xG1>";
  expect_format_error(metadata(bad_byte), "byte token 8 is '<0xG1>'");

  m = metadata(bpe_spec());
  m.set("tokenizer.ggml.pre", Value("deepseek-coder"));
  expect_format_error(m,
                      "tokenizer.ggml.pre 'deepseek-coder' is not "
                      "supported");
  m = metadata(bpe_spec());
  m.erase("tokenizer.ggml.merges");
  expect_format_error(m, "'tokenizer.ggml.merges' is missing");
  // Three tokens: the default BOS id (11) is outside the vocabulary.
  VocabSpec tiny = bpe_spec();
  tiny.tokens.resize(3);
  tiny.types.resize(3);
  m = metadata(tiny);
  m.set("tokenizer.ggml.add_bos_token", Value(true));
  expect_format_error(m, "adds a BOS token but has none");

  m = metadata(spm_spec(-1, -2));
  m.set("tokenizer.ggml.tokens", Value::array(std::vector<std::string>{}));
  expect_format_error(m, "tokenizer.ggml.tokens holds 0 tokens");
}

TEST(TokenizerErrors, OutOfRangeSpecialIdsAreIgnored) {
  // As llama.cpp: converted files sometimes carry a padding id one past
  // the vocabulary.
  gguf::Metadata m = metadata(spm_spec(-1, -2));
  m.set("tokenizer.ggml.padding_token_id", Value(uint32_t(11)));
  m.set("tokenizer.ggml.eos_token_id", Value(uint32_t(1000)));
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(m);
  EXPECT_EQ(t.pad(), tokenizer::kNoToken);
  EXPECT_EQ(t.eos(), 2);
}

TEST(TokenizerFiles, LlamaSpmSpecialsAndRoundTrip) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-llama-spm.gguf");
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf_file(path);
  EXPECT_EQ(t.size(), 32000u);
  EXPECT_EQ(t.encode("Hello world"),
            (std::vector<tokenizer::TokenId>{1, 15043, 3186}));
  EXPECT_EQ(t.encode("<s>Hello</s>", false, true),
            (std::vector<tokenizer::TokenId>{1, 15043, 2}));
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.is_eog(2));
  for (const char* text : {"Hello world", " two  spaces", "\xf0\x9f\xa6\x99",
                           "line\nbreak\t", "\xe4\xb8\xad\xe6\x96\x87"}) {
    std::vector<tokenizer::TokenId> ids = t.encode(text, false);
    EXPECT_EQ(t.decode(ids), text);
    ids.insert(ids.begin(), t.bos());
    EXPECT_EQ(t.decode(ids, true), std::string(" ") + text);
  }
}

TEST(TokenizerFiles, Gpt2DecodesAndCleansSpaces) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-gpt-2.gguf");
  tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf_file(path);
  EXPECT_EQ(t.size(), 50257u);
  EXPECT_EQ(t.encode("Hello world"),
            (std::vector<tokenizer::TokenId>{15496, 995}));
  EXPECT_EQ(t.bos(), 50256);
  EXPECT_EQ(t.eot(), 50256);
  EXPECT_EQ(t.encode("Hi<|endoftext|>", true, true),
            (std::vector<tokenizer::TokenId>{17250, 50256}));
  EXPECT_EQ(t.decode(t.encode("Hello , world !")), "Hello, world!");
  EXPECT_EQ(t.decode(t.encode("caf\xc3\xa9 \xf0\x9f\xa6\x99")),
            "caf\xc3\xa9 \xf0\x9f\xa6\x99");
}

}  // namespace
}  // namespace nascent::test
