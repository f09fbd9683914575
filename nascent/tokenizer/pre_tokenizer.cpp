#include "nascent/tokenizer/pre_tokenizer.h"

#include "nascent/tokenizer/unicode.h"

namespace nascent::tokenizer {
namespace {

// A view of the code points that answers "none" past the end, so the
// look-aheads of the patterns need no bounds checks.
class Text {
 public:
  static constexpr uint32_t kEnd = 0xFFFFFFFF;
  explicit Text(const std::vector<uint32_t>& cps) : cps_(cps) {}
  size_t size() const { return cps_.size(); }
  uint32_t at(size_t i) const { return i < cps_.size() ? cps_[i] : kEnd; }
  bool inside(size_t i) const { return i < cps_.size(); }
  bool letter(size_t i) const { return inside(i) && unicode::is_letter(at(i)); }
  bool number(size_t i) const { return inside(i) && unicode::is_number(at(i)); }
  bool space(size_t i) const {
    return inside(i) && unicode::is_whitespace(at(i));
  }
  // [^\s\p{L}\p{N}]: any code point that is none of the three.
  bool other(size_t i) const {
    return inside(i) && unicode::classes(at(i)) == 0;
  }
  bool newline(size_t i) const { return at(i) == '\r' || at(i) == '\n'; }

 private:
  const std::vector<uint32_t>& cps_;
};

uint32_t ascii_lower(uint32_t c) {
  return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

// Length of the contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t contraction(const Text& t, size_t i, bool any_case) {
  if (t.at(i) != '\'' || !t.inside(i + 1)) return 0;
  auto low = [&](size_t k) {
    return any_case ? ascii_lower(t.at(k)) : t.at(k);
  };
  uint32_t a = low(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (!t.inside(i + 2)) return 0;
  uint32_t b = low(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
      (a == 'l' && b == 'l')) {
    return 3;
  }
  return 0;
}

// \s+(?!\S)|\s+ at i, given n >= 1 white spaces there: a run followed by
// more text leaves its last space to the next word.
size_t space_run(const Text& t, size_t i, size_t n) {
  return n > 1 && t.inside(i + n) ? n - 1 : n;
}

size_t count_spaces(const Text& t, size_t i) {
  size_t n = 0;
  while (t.space(i + n)) ++n;
  return n;
}

void split_gpt2(const Text& t, std::vector<std::pair<size_t, size_t>>& out) {
  size_t pos = 0;
  while (pos < t.size()) {
    size_t start = pos;
    if (size_t n = contraction(t, pos, false)) {
      out.emplace_back(start, pos + n);
      pos += n;
      continue;
    }
    // " ?" prefixes: a single U+0020 joins the word after it.
    size_t p = t.at(pos) == ' ' ? pos + 1 : pos;
    if (t.letter(p)) {
      while (t.letter(p)) ++p;
    } else if (t.number(p)) {
      while (t.number(p)) ++p;
    } else if (t.other(p)) {
      while (t.other(p)) ++p;
    } else {
      size_t n = count_spaces(t, pos);
      p = pos + (n ? space_run(t, pos, n) : 1);
    }
    out.emplace_back(start, p);
    pos = p;
  }
}

void split_llama3(const Text& t, size_t max_digits,
                  std::vector<std::pair<size_t, size_t>>& out) {
  size_t pos = 0;
  while (pos < t.size()) {
    size_t start = pos;
    if (size_t n = contraction(t, pos, true)) {
      out.emplace_back(start, pos + n);
      pos += n;
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!t.newline(pos) && !t.number(pos) &&
        (t.letter(pos) || t.letter(pos + 1))) {
      size_t p = pos + 1;
      while (t.letter(p)) ++p;
      out.emplace_back(start, p);
      pos = p;
      continue;
    }
    // \p{N}{1,max_digits}: a run of digits in groups from the left.
    if (t.number(pos)) {
      size_t p = pos;
      while (t.number(p) && p - pos < max_digits) ++p;
      out.emplace_back(start, p);
      pos = p;
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    size_t p = t.at(pos) == ' ' ? pos + 1 : pos;
    if (t.other(p)) {
      while (t.other(p)) ++p;
      while (t.newline(p)) ++p;
      out.emplace_back(start, p);
      pos = p;
      continue;
    }
    // \s*[\r\n]+ takes white space up to its last line break, then
    // \s+(?!\S) and \s+.
    size_t n = count_spaces(t, pos);
    size_t last_break = 0;
    for (size_t k = 0; k < n; ++k) {
      if (t.newline(pos + k)) last_break = k + 1;
    }
    if (last_break) {
      p = pos + last_break;
    } else if (n) {
      p = pos + space_run(t, pos, n);
    } else {
      p = pos + 1;
    }
    out.emplace_back(start, p);
    pos = p;
  }
}

}  // namespace

std::vector<std::pair<size_t, size_t>> split_words(
    const std::vector<uint32_t>& cps, PreTokenizer kind) {
  std::vector<std::pair<size_t, size_t>> words;
  Text t(cps);
  switch (kind) {
    case PreTokenizer::gpt2:
      split_gpt2(t, words);
      break;
    case PreTokenizer::llama3:
      split_llama3(t, 3, words);
      break;
    case PreTokenizer::qwen2:
      split_llama3(t, 1, words);
      break;
  }
  return words;
}

std::vector<std::string> pre_tokenize(std::string_view text,
                                      PreTokenizer kind) {
  std::vector<uint32_t> cps = unicode::to_code_points(text);
  std::vector<std::string> words;
  std::string utf8;
  for (auto [begin, end] : split_words(cps, kind)) {
    utf8.clear();
    for (size_t i = begin; i < end; ++i) unicode::append_utf8(utf8, cps[i]);
    std::string word;
    for (char c : utf8) word += unicode::byte_to_utf8(uint8_t(c));
    words.push_back(std::move(word));
  }
  return words;
}

}  // namespace nascent::tokenizer
