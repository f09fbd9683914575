// The little Unicode the tokenizers need: UTF-8 decoding and encoding, the
// letter / number / white-space classes of the pre-tokenizer patterns
// (\p{L}, \p{N}, \s), and GPT-2's byte-to-character mapping.
//
// The class tables are generated from Unicode's data by
// scripts/gen_unicode_data.py (unicode_data.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nascent::tokenizer::unicode {

inline constexpr uint32_t kReplacement = 0xFFFD;

enum Class : uint8_t {
  kLetter = 1,      // General category L*.
  kNumber = 2,      // General category N*.
  kWhitespace = 4,  // The White_Space property.
};
// The classes of a code point (a combination of Class bits; 0 for
// everything else: punctuation, symbols, marks, unassigned).
uint8_t classes(uint32_t cp);
inline bool is_letter(uint32_t cp) {
  return classes(cp) & kLetter;
}
inline bool is_number(uint32_t cp) {
  return classes(cp) & kNumber;
}
inline bool is_whitespace(uint32_t cp) {
  return classes(cp) & kWhitespace;
}
// The Unicode version the tables were generated from.
const char* data_version();

// Bytes of the UTF-8 sequence a lead byte starts, from its high bits alone
// (1 for ASCII and for stray continuation bytes), as SentencePiece splits.
inline size_t utf8_length_from_lead(unsigned char lead) {
  static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Decodes the well-formed UTF-8 sequence at s[pos] (no overlongs, no
// surrogates, at most U+10FFFF). Returns its length, or 0 if it is not one.
size_t decode_utf8(std::string_view s, size_t pos, uint32_t* cp);
// Code points of s; each byte that does not start a well-formed sequence
// becomes U+FFFD, as llama.cpp does.
std::vector<uint32_t> to_code_points(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);
// Length of the longest prefix of s that does not end inside an incomplete
// UTF-8 sequence: what a stream can print now without splitting a character.
size_t complete_utf8_prefix(std::string_view s);

// GPT-2's byte-level alphabet: every byte maps to a printable character
// (printable Latin-1 bytes to themselves, the rest to U+0100 onwards).
// The UTF-8 of byte b's character:
const std::string& byte_to_utf8(uint8_t b);
// The byte whose character is cp, or -1.
int code_point_to_byte(uint32_t cp);

}  // namespace nascent::tokenizer::unicode
