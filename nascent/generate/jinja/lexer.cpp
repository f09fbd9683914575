#include "nascent/generate/jinja/lexer.h"

#include <fmt/format.h>

#include "nascent/generate/jinja/value.h"
#include "nascent/tokenizer/unicode.h"

namespace nascent::jinja {
namespace {

bool py_space(uint32_t cp) {
  return tokenizer::unicode::is_whitespace(cp) || (cp >= 0x1C && cp <= 0x1F);
}

// Python's str.splitlines() boundaries, joined back with "\n".
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\r') {
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += '\n';
    } else if (c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) {
      out += '\n';
    } else if (c == 0xC2 && i + 1 < s.size() &&
               static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out += '\n';
      ++i;
    } else if (c == 0xE2 && i + 2 < s.size() &&
               static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += '\n';
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& opt)
      : src_(std::move(src)), opt_(opt) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        emit_text(text);
        pos_ = tag;
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'.
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const int text_line = line_;
      if (mod == '-') {
        text = rstrip(text);
      } else if (mod != '+' && opt_.lstrip_blocks && kind != '{') {
        const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0.
        if (l_pos > 0 || line_starting) {
          bool blank = l_pos < text.size();
          for (size_t i = l_pos; i < text.size(); ++i) {
            if (text[i] != ' ' && text[i] != '\t') blank = false;
          }
          if (blank) text.resize(l_pos);
        }
      }
      line_ += count_lines(src_.substr(pos_, tag - pos_));
      emit_text(text, text_line);
      pos_ = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        comment();
      } else if (kind == '%' && is_raw()) {
        raw();
      } else {
        tag_body(kind == '{');
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({Token::Type::end, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t i = from;
    while ((i = src_.find('{', i)) != std::string::npos) {
      if (i + 1 < src_.size() &&
          (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
      ++i;
    }
    return src_.size();
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError(fmt::format("template line {}: {}", line_, what));
  }

  static std::string rstrip(std::string_view s) {
    size_t end = s.size(), len = 0;
    while (end > 0 && py_space_before(s, end, &len)) end -= len;
    return std::string(s.substr(0, end));
  }

  void skip_space_after() {
    size_t len = 0;
    while (pos_ < src_.size() && py_space_at(src_, pos_, &len)) {
      line_ += src_[pos_] == '\n';
      pos_ += len;
    }
  }

  // After a block or comment end: '-' strips, trim_blocks eats one newline.
  void after_block_end(char mod) {
    if (mod == '-') {
      skip_space_after();
    } else if (mod != '+' && opt_.trim_blocks && pos_ < src_.size() &&
               src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  void emit_text(const std::string& text, int line = -1) {
    if (!text.empty()) {
      tokens_.push_back({Token::Type::text, text, line < 0 ? line_ : line});
    }
  }

  void comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail("comment {# is not closed");
    const char mod =
        end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')
            ? src_[end - 1]
            : '\0';
    line_ += count_lines(src_.substr(pos_, end - pos_));
    pos_ = end + 2;
    after_block_end(mod);
  }

  // {% raw %}: whether the tag at pos_ is one.
  bool is_raw() const {
    size_t i = pos_;
    while (i < src_.size() && (src_[i] == ' ' || src_[i] == '\t')) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && (src_[i] == ' ' || src_[i] == '\t')) ++i;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    return src_.compare(i, 2, "%}") == 0;
  }

  void raw() {
    size_t close = src_.find("%}", pos_);
    const char mod = src_[close - 1];
    pos_ = close + 2;
    after_block_end(mod == '-' || mod == '+' ? mod : '\0');
    // The body runs up to {% endraw %}, verbatim.
    size_t i = pos_;
    while (true) {
      i = src_.find("{%", i);
      if (i == std::string::npos) fail("{% raw %} is not closed by endraw");
      size_t j = i + 2;
      const char m = j < src_.size() ? src_[j] : '\0';
      if (m == '-' || m == '+') ++j;
      while (j < src_.size() && (src_[j] == ' ' || src_[j] == '\t')) ++j;
      if (src_.compare(j, 6, "endraw") == 0) {
        std::string body = src_.substr(pos_, i - pos_);
        if (m == '-') body = rstrip(body);
        emit_text(body);
        line_ += count_lines(src_.substr(pos_, i - pos_));
        size_t end = src_.find("%}", j);
        if (end == std::string::npos) fail("{% endraw is not closed");
        const char em = src_[end - 1];
        pos_ = end + 2;
        after_block_end(em == '-' || em == '+' ? em : '\0');
        return;
      }
      i += 2;
    }
  }

  void tag_body(bool var) {
    tokens_.push_back(
        {var ? Token::Type::var_begin : Token::Type::block_begin, "", line_});
    const char close = var ? '}' : '%';
    while (true) {
      while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' ||
                                    src_[pos_] == '\n' || src_[pos_] == '\r')) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        fail(var ? "'{{' is not closed by '}}'" : "'{%' is not closed by '%}'");
      }
      const char c = src_[pos_];
      // The closing delimiter, with its whitespace control sign.
      char mod = '\0';
      size_t at = pos_;
      if ((c == '-' || c == '+') && at + 2 < src_.size() + 1 &&
          src_.compare(at + 1, 2, std::string{close, '}'}) == 0) {
        mod = c;
        ++at;
      }
      if (src_.compare(at, 2, std::string{close, '}'}) == 0 &&
          (mod != '+' || !var)) {
        tokens_.push_back(
            {var ? Token::Type::var_end : Token::Type::block_end, "", line_});
        pos_ = at + 2;
        if (var) {
          if (mod == '-') skip_space_after();
        } else {
          after_block_end(mod);
        }
        return;
      }
      expression_token();
    }
  }

  void expression_token() {
    const char c = src_[pos_];
    const int line = line_;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[e])) ||
              src_[e] == '_')) {
        ++e;
      }
      tokens_.push_back({Token::Type::name, src_.substr(pos_, e - pos_), line});
      pos_ = e;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number();
      return;
    }
    if (c == '\'' || c == '"') {
      string_literal(c);
      return;
    }
    static const char* kOps[] = {
        "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(",
        ")",  "[",  "]",  "{",  "}",  ",",  ".", ":", "|", "=", "<", ">", ";"};
    for (const char* op : kOps) {
      const size_t n = std::char_traits<char>::length(op);
      if (src_.compare(pos_, n, op) == 0) {
        tokens_.push_back({Token::Type::op, op, line});
        pos_ += n;
        return;
      }
    }
    fail(fmt::format("unexpected character '{}' in a tag", c));
  }

  void number() {
    size_t e = pos_;
    std::string digits;
    bool is_float = false;
    auto take_digits = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) ||
              (src_[e] == '_' && e + 1 < src_.size() &&
               std::isdigit(static_cast<unsigned char>(src_[e + 1]))))) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    take_digits();
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      digits += '.';
      ++e;
      take_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() &&
          std::isdigit(static_cast<unsigned char>(src_[f]))) {
        is_float = true;
        digits += 'e';
        digits += src_.substr(e + 1, f - e - 1);
        e = f;
        take_digits();
      }
    }
    tokens_.push_back({is_float ? Token::Type::floating : Token::Type::integer,
                       digits, line_});
    pos_ = e;
  }

  void string_literal(char quote) {
    const int line = line_;
    std::string out;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) {
        throw TemplateError(fmt::format(
            "template line {}: string literal is not closed", line));
      }
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) {  // A backslash as the last byte.
        throw TemplateError(fmt::format(
            "template line {}: string literal is not closed", line));
      }
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\n':
          ++line_;
          break;  // A line continuation.
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = i + k < src_.size() ? src_[i + k] : '\0';
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              fail(fmt::format("bad \\{} escape in a string literal", e));
            }
            cp = cp * 16 + static_cast<uint32_t>(
                               std::isdigit(static_cast<unsigned char>(h))
                                   ? h - '0'
                                   : std::tolower(h) - 'a' + 10);
          }
          if (cp > 0x10FFFF) fail("escape beyond U+10FFFF in a string literal");
          tokenizer::unicode::append_utf8(out, cp);
          i += n;
          break;
        }
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        default:
          out += '\\';  // Python keeps unknown escapes as written.
          out += e;
      }
    }
    tokens_.push_back({Token::Type::string, out, line});
    pos_ = i + 1;
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

bool py_space_at(std::string_view s, size_t pos, size_t* len) {
  uint32_t cp = 0;
  size_t n = tokenizer::unicode::decode_utf8(s, pos, &cp);
  if (n == 0 || !py_space(cp)) return false;
  *len = n;
  return true;
}

bool py_space_before(std::string_view s, size_t end, size_t* len) {
  // Step back over UTF-8 continuation bytes to the start of the character.
  size_t start = end - 1;
  while (start > 0 && end - start < 4 &&
         (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
    --start;
  }
  size_t n = 0;
  if (!py_space_at(s, start, &n) || start + n != end) return false;
  *len = n;
  return true;
}

std::vector<Token> tokenize(std::string_view source, const LexOptions& opt) {
  return Lexer(normalize_newlines(source), opt).run();
}

}  // namespace nascent::jinja
