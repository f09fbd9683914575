// Unicode helpers and the hand-written pre-tokenizers. The splits are
// compared with what the original regular expressions give.
#include <gtest/gtest.h>

#include "nascent/tokenizer/pre_tokenizer.h"
#include "nascent/tokenizer/unicode.h"

namespace nascent::test {
namespace {

// Expected splits computed with Python's `regex` module from the original
// patterns (pre_tokenizer.h); one row per input text.
const std::vector<std::string> kTexts = {
    "Hello world",
    " Hello  world!!",
    "I'm sure they'LL say it's fine",
    "don'T",
    "12345 abc 1234567",
    "a\n\nb",
    "x  \n  y",
    "  leading and trailing  ",
    "tab\tsep\t\tend\t",
    "café ½ Ⅷ ²",
    "中文 नमस्ते",
    "\xc2\xa0"
    "nbsp\xe3\x80\x80"
    "ideo\xe2\x80\x83"
    "em",
    "emoji 🦙.cpp!?",
    "(foo)[bar]{baz}",
    "'''",
    "' s",
    "line1\r\nline2\r\n\r\n",
    "...\n\n",
    "a1b2c3",
    "3.14159",
    "\xc2\x85"
    "next",
};
const std::vector<std::vector<std::string>> kGpt2Splits = {
    {"Hello", " world"},
    {" Hello", " ", " world", "!!"},
    {"I", "'m", " sure", " they", "'", "LL", " say", " it", "'s", " fine"},
    {"don", "'", "T"},
    {"12345", " abc", " 1234567"},
    {"a", "\n", "\n", "b"},
    {"x", "  \n ", " y"},
    {" ", " leading", " and", " trailing", "  "},
    {"tab", "\t", "sep", "\t", "\t", "end", "\t"},
    {"café", " ½", " Ⅷ", " ²"},
    {"中文", " नमस", "्", "त", "े"},
    {"\xc2\xa0", "nbsp", "\xe3\x80\x80", "ideo", "\xe2\x80\x83", "em"},
    {"emoji", " 🦙.", "cpp", "!?"},
    {"(", "foo", ")[", "bar", "]{", "baz", "}"},
    {"'''"},
    {"'", " s"},
    {"line", "1", "\r", "\n", "line", "2", "\r\n\r\n"},
    {"...", "\n\n"},
    {"a", "1", "b", "2", "c", "3"},
    {"3", ".", "14159"},
    {"\xc2\x85", "next"},
};
const std::vector<std::vector<std::string>> kLlama3Splits = {
    {"Hello", " world"},
    {" Hello", " ", " world", "!!"},
    {"I", "'m", " sure", " they", "'LL", " say", " it", "'s", " fine"},
    {"don", "'T"},
    {"123", "45", " abc", " ", "123", "456", "7"},
    {"a", "\n\n", "b"},
    {"x", "  \n", " ", " y"},
    {" ", " leading", " and", " trailing", "  "},
    {"tab", "\tsep", "\t", "\tend", "\t"},
    {"café", " ", "½", " ", "Ⅷ", " ", "²"},
    {"中文", " नमस", "्त", "े"},
    {"\xc2\xa0"
     "nbsp",
     "\xe3\x80\x80"
     "ideo",
     "\xe2\x80\x83"
     "em"},
    {"emoji", " 🦙.", "cpp", "!?"},
    {"(foo", ")[", "bar", "]{", "baz", "}"},
    {"'''"},
    {"'", " s"},
    {"line", "1", "\r\n", "line", "2", "\r\n\r\n"},
    {"...\n\n"},
    {"a", "1", "b", "2", "c", "3"},
    {"3", ".", "141", "59"},
    {"\xc2\x85"
     "next"},
};
const std::vector<std::vector<std::string>> kQwen2Splits = {
    {"Hello", " world"},
    {" Hello", " ", " world", "!!"},
    {"I", "'m", " sure", " they", "'LL", " say", " it", "'s", " fine"},
    {"don", "'T"},
    {"1", "2", "3", "4", "5", " abc", " ", "1", "2", "3", "4", "5", "6", "7"},
    {"a", "\n\n", "b"},
    {"x", "  \n", " ", " y"},
    {" ", " leading", " and", " trailing", "  "},
    {"tab", "\tsep", "\t", "\tend", "\t"},
    {"café", " ", "½", " ", "Ⅷ", " ", "²"},
    {"中文", " नमस", "्त", "े"},
    {"\xc2\xa0"
     "nbsp",
     "\xe3\x80\x80"
     "ideo",
     "\xe2\x80\x83"
     "em"},
    {"emoji", " 🦙.", "cpp", "!?"},
    {"(foo", ")[", "bar", "]{", "baz", "}"},
    {"'''"},
    {"'", " s"},
    {"line", "1", "\r\n", "line", "2", "\r\n\r\n"},
    {"...\n\n"},
    {"a", "1", "b", "2", "c", "3"},
    {"3", ".", "1", "4", "1", "5", "9"},
    {"\xc2\x85"
     "next"},
};

std::vector<std::string> words_of(const std::string& text,
                                  tokenizer::PreTokenizer k) {
  std::vector<uint32_t> cps = tokenizer::unicode::to_code_points(text);
  std::vector<std::string> words;
  for (auto [begin, end] : split_words(cps, k)) {
    std::string w;
    for (size_t i = begin; i < end; ++i)
      tokenizer::unicode::append_utf8(w, cps[i]);
    words.push_back(w);
  }
  return words;
}

void check_splits(tokenizer::PreTokenizer kind,
                  const std::vector<std::vector<std::string>>& expected) {
  ASSERT_EQ(expected.size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    EXPECT_EQ(words_of(kTexts[i], kind), expected[i]) << "text " << i;
  }
}

TEST(PreTokenizer, Gpt2MatchesTheRegex) {
  check_splits(tokenizer::PreTokenizer::gpt2, kGpt2Splits);
}
TEST(PreTokenizer, Llama3MatchesTheRegex) {
  check_splits(tokenizer::PreTokenizer::llama3, kLlama3Splits);
}
TEST(PreTokenizer, Qwen2MatchesTheRegex) {
  check_splits(tokenizer::PreTokenizer::qwen2, kQwen2Splits);
}

TEST(PreTokenizer, WordsAreByteLevelEncoded) {
  // Space is U+0120 "Ġ", newline U+010A "Ċ" in GPT-2's alphabet; a stray
  // byte becomes U+FFFD (EF BF BD) first.
  EXPECT_EQ(
      tokenizer::pre_tokenize("Hi there\n", tokenizer::PreTokenizer::gpt2),
      (std::vector<std::string>{"Hi", "\xc4\xa0there", "\xc4\x8a"}));
  EXPECT_EQ(tokenizer::pre_tokenize("a\xff", tokenizer::PreTokenizer::gpt2),
            (std::vector<std::string>{"a", "\xc3\xaf\xc2\xbf\xc2\xbd"}));
  EXPECT_TRUE(
      tokenizer::pre_tokenize("", tokenizer::PreTokenizer::llama3).empty());
}

TEST(Unicode, Classes) {
  using namespace tokenizer::unicode;
  EXPECT_EQ(classes('A'), kLetter);
  EXPECT_EQ(classes(0x00E9), kLetter);  // é
  EXPECT_EQ(classes(0x4E2D), kLetter);  // 中 (Lo)
  EXPECT_EQ(classes(0x02B0), kLetter);  // ʰ (Lm)
  EXPECT_EQ(classes('7'), kNumber);
  EXPECT_EQ(classes(0x00BD), kNumber);  // ½ (No)
  EXPECT_EQ(classes(0x2167), kNumber);  // Ⅷ (Nl)
  EXPECT_EQ(classes(0x0663), kNumber);  // Arabic-Indic three (Nd)
  for (uint32_t ws : {0x09u, 0x0Au, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u,
                      0x2000u, 0x200Au, 0x2028u, 0x202Fu, 0x3000u}) {
    EXPECT_EQ(classes(ws), kWhitespace) << std::hex << ws;
  }
  // Not White_Space, though Python's isspace() says so for 0x1C..0x1F.
  for (uint32_t c : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu}) {
    EXPECT_EQ(classes(c), 0) << std::hex << c;
  }
  EXPECT_EQ(classes('.'), 0);
  EXPECT_EQ(classes(0x094D), 0);   // Devanagari virama (Mn)
  EXPECT_EQ(classes(0x1F999), 0);  // 🦙 (So)
  EXPECT_EQ(classes(0xE000), 0);   // Private use
  EXPECT_EQ(classes(0x110000), 0);
  EXPECT_STRNE(data_version(), "");
}

TEST(Unicode, DecodeRejectsMalformedSequences) {
  using namespace tokenizer::unicode;
  uint32_t cp = 0;
  EXPECT_EQ(decode_utf8("\xe2\x82\xac", 0, &cp), 3u);
  EXPECT_EQ(cp, 0x20ACu);
  EXPECT_EQ(decode_utf8("\xf0\x9f\xa6\x99", 0, &cp), 4u);
  EXPECT_EQ(cp, 0x1F999u);
  EXPECT_EQ(decode_utf8("\xc0\x80", 0, &cp), 0u);          // Overlong.
  EXPECT_EQ(decode_utf8("\xed\xa0\x80", 0, &cp), 0u);      // Surrogate.
  EXPECT_EQ(decode_utf8("\xf4\x90\x80\x80", 0, &cp), 0u);  // > U+10FFFF.
  EXPECT_EQ(decode_utf8("\xe2\x82", 0, &cp), 0u);          // Truncated.
  EXPECT_EQ(decode_utf8("\x80", 0, &cp), 0u);              // Continuation.
  EXPECT_EQ(to_code_points("a\xe2\x82"
                           "b"),
            (std::vector<uint32_t>{'a', kReplacement, kReplacement, 'b'}));
  std::string s;
  for (uint32_t c : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) append_utf8(s, c);
  EXPECT_EQ(s, "$\xc2\xa2\xe2\x82\xac\xf0\x90\x8d\x88");
}

TEST(Unicode, CompletePrefixHoldsBackPartialCharacters) {
  using tokenizer::unicode::complete_utf8_prefix;
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
  EXPECT_EQ(complete_utf8_prefix("ab"), 2u);
  EXPECT_EQ(complete_utf8_prefix("a\xe2"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xe2\x82"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xe2\x82\xac"), 4u);
  EXPECT_EQ(complete_utf8_prefix("\xf0\x9f\xa6"), 0u);
  EXPECT_EQ(complete_utf8_prefix("\xf0\x9f\xa6\x99"), 4u);
  // Bytes no continuation can repair are let through.
  EXPECT_EQ(complete_utf8_prefix("a\x80"), 2u);
  EXPECT_EQ(complete_utf8_prefix("\xe2"
                                 "a"),
            2u);
  EXPECT_EQ(complete_utf8_prefix("\xff"), 1u);
}

TEST(Unicode, ByteLevelAlphabet) {
  using namespace tokenizer::unicode;
  EXPECT_EQ(byte_to_utf8('A'), "A");
  EXPECT_EQ(byte_to_utf8(' '), "\xc4\xa0");   // U+0120 Ġ
  EXPECT_EQ(byte_to_utf8('\n'), "\xc4\x8a");  // U+010A Ċ
  EXPECT_EQ(byte_to_utf8(0xAD), "\xc5\x83");  // U+0143, the last one.
  EXPECT_EQ(byte_to_utf8(0xFF), "\xc3\xbf");  // ÿ maps to itself.
  for (int b = 0; b < 256; ++b) {
    uint32_t cp;
    ASSERT_GT(decode_utf8(byte_to_utf8(uint8_t(b)), 0, &cp), 0u);
    ASSERT_EQ(code_point_to_byte(cp), b);
  }
  EXPECT_EQ(code_point_to_byte(0x0144), -1);
  EXPECT_EQ(code_point_to_byte('\n'), -1);
}

}  // namespace
}  // namespace nascent::test
