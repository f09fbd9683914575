// Splits Jinja template source into tokens: text between tags, tag
// delimiters and the expression tokens inside tags. Whitespace control is
// applied here, as Jinja2's lexer does it: `{%-`/`-%}` strip all whitespace
// on that side, trim_blocks drops the newline after a block or comment tag,
// lstrip_blocks the spaces and tabs before one at the start of a line
// (`{%+` keeps them). Line endings become "\n" and one trailing newline of
// the source is dropped (keep_trailing_newline=False).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nascent::jinja {

struct Token {
  enum class Type {
    text,
    var_begin,    // {{
    var_end,      // }}
    block_begin,  // {%
    block_end,    // %}
    name,
    string,  // Escapes decoded.
    integer,
    floating,
    op,  // + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
    end
  };
  Type type;
  std::string text;
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// TemplateError naming the line for an unclosed tag, comment or string.
std::vector<Token> tokenize(std::string_view source, const LexOptions& opt);

// Python's str.isspace() for the code point at s[pos] (UTF-8); its length
// in bytes through *len, 0 when it is not whitespace.
bool py_space_at(std::string_view s, size_t pos, size_t* len);
// Whether the code point ending at s[end) is Python whitespace; its length.
bool py_space_before(std::string_view s, size_t end, size_t* len);

}  // namespace nascent::jinja
