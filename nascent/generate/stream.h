// Turning generated tokens into text as they come: whole UTF-8 characters
// only (a token may end inside one), and stop strings cut out even when
// they arrive split over several tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nascent/tokenizer/tokenizer.h"

namespace nascent::generate {

// Token pieces in, printable text out. Bytes of an unfinished character
// wait for the next token; bytes that can never form a character come out
// as U+FFFD, so the output is always valid UTF-8.
class StreamingDetokenizer {
 public:
  // special: print control tokens' text ("<|im_end|>") instead of nothing.
  explicit StreamingDetokenizer(tokenizer::Tokenizer tokenizer,
                                bool special = false)
      : tokenizer_(std::move(tokenizer)), special_(special) {}

  std::string push(tokenizer::TokenId id);
  // What is still held back, with unfinished characters as U+FFFD; call at
  // the end of generation.
  std::string flush();

 private:
  tokenizer::Tokenizer tokenizer_;
  bool special_;
  std::string pending_;
};

// Valid UTF-8 for any bytes: each byte that does not start a well-formed
// sequence becomes U+FFFD.
std::string sanitize_utf8(std::string_view bytes);

// Watches generated text for stop strings. push() returns the text that can
// be shown now: text that might be the start of a stop string waits until
// the next push() proves it is not. Once a stop string is found, the text
// before it is returned, it and everything after are dropped, and stopped()
// is true.
class StopStrings {
 public:
  // ValueError for an empty stop string (it would stop at once).
  explicit StopStrings(std::vector<std::string> stops);

  std::string push(std::string_view text);
  // The held-back text, at the end of generation.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that was found ("" until then).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace nascent::generate
