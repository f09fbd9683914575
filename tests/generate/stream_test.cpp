// Streaming output: characters split over tokens wait until whole; stop
// strings split over tokens are still found and cut.
#include <gtest/gtest.h>

#include "nascent/generate/stream.h"

namespace nascent::generate {
namespace {

using gguf::Value;

// A SentencePiece vocabulary with byte tokens for the bytes of "€" and
// "é", one normal piece and a control token.
tokenizer::Tokenizer byte_vocab() {
  gguf::Metadata m("bytes.gguf");
  m.set("tokenizer.ggml.model", Value("llama"));
  m.set("tokenizer.ggml.tokens",
        Value::array(std::vector<std::string>{"<unk>", "<s>", "</s>", "<0xE2>",
                                              "<0x82>", "<0xAC>", "<0xC3>",
                                              "\xe2\x96\x81hi", "<|im_end|>"}));
  m.set("tokenizer.ggml.token_type",
        Value::array(std::vector<int32_t>{2, 3, 3, 6, 6, 6, 6, 1, 3}));
  return tokenizer::Tokenizer::from_gguf(m);
}

TEST(StreamingDetokenizer, HoldsPartialCharacters) {
  StreamingDetokenizer d(byte_vocab());
  EXPECT_EQ(d.push(7), " hi");
  EXPECT_EQ(d.push(3), "");
  EXPECT_EQ(d.push(4), "");
  EXPECT_EQ(d.push(5), "\xe2\x82\xac");  // €
  // A lead byte followed by a normal piece can never complete: U+FFFD.
  EXPECT_EQ(d.push(6), "");
  EXPECT_EQ(d.push(7), "\xef\xbf\xbd hi");
  // At the end, an unfinished character is flushed as U+FFFD per byte.
  d.push(3);
  d.push(4);
  EXPECT_EQ(d.flush(), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDetokenizer, ControlTokens) {
  StreamingDetokenizer quiet(byte_vocab());
  EXPECT_EQ(quiet.push(8), "");
  StreamingDetokenizer shown(byte_vocab(), true);
  EXPECT_EQ(shown.push(8), "<|im_end|>");
}

TEST(StreamingDetokenizer, SanitizeUtf8) {
  EXPECT_EQ(sanitize_utf8("ok \xe2\x82\xac"), "ok \xe2\x82\xac");
  EXPECT_EQ(sanitize_utf8("\xff"
                          "a\xc0\x80"),
            "\xef\xbf\xbd"
            "a\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(StopStrings, CutsAStopSplitOverPushes) {
  StopStrings s({"</s>", "STOP"});
  std::string out;
  out += s.push("Hello <");
  EXPECT_EQ(out, "Hello ");  // "<" might start "</s>".
  out += s.push("/s");
  EXPECT_EQ(out, "Hello ");
  EXPECT_FALSE(s.stopped());
  out += s.push(">tail");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.matched(), "</s>");
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(s.push("more"), "");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, ReleasesTextThatIsNotAStop) {
  StopStrings s({"</s>"});
  EXPECT_EQ(s.push("a<"), "a");
  EXPECT_EQ(s.push("b"), "<b");
  EXPECT_EQ(s.push("</"), "");
  EXPECT_EQ(s.flush(), "</");
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, EarliestStopWins) {
  StopStrings s({"b", "ab"});
  EXPECT_EQ(s.push("xab"), "x");
  EXPECT_EQ(s.matched(), "ab");
  StopStrings t({"b", "ab"});
  EXPECT_EQ(t.push("xbab"), "x");
  EXPECT_EQ(t.matched(), "b");
  EXPECT_THROW(StopStrings({"ok", ""}), ValueError);
  StopStrings none({});
  EXPECT_EQ(none.push("anything"), "anything");
}

}  // namespace
}  // namespace nascent::generate
