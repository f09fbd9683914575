#include "nascent/generate/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace nascent::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* Dict::find_key(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (equal(k, key)) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::function(std::string name, Function f) {
  Value v;
  v.v_ =
      std::make_shared<const Callable>(Callable{std::move(name), std::move(f)});
  return v;
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const std::string& Value::function_name() const {
  return std::get<FuncPtr>(v_)->name;
}

Value Value::call(Args& args) const {
  return std::get<FuncPtr>(v_)->fn(args);
}

List Value::consume() const {
  List out = std::move(*std::get<ListPtr>(v_));
  std::get<ListPtr>(v_)->clear();
  return out;
}

bool Value::truthy() const {
  if (generator_) return true;
  switch (kind()) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return as_bool();
    case Kind::integer:
      return as_int() != 0;
    case Kind::floating:
      return as_double() != 0.0;
    case Kind::string:
      return !str().empty();
    case Kind::list:
      return !list().empty();
    case Kind::dict:
      return !dict().items.empty() || dict().is_namespace;
    case Kind::function:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  if (generator_) return "generator";
  switch (kind()) {
    case Kind::undefined:
      return "undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
    case Kind::dict:
      return dict().is_namespace ? "Namespace" : "dict";
    case Kind::function:
      return "function";
  }
  return "?";
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, laid out as Python's repr: positional for
  // exponents -4..15, else d.ddde+XX.
  // fmt's "{}" is the shortest round-trip form (std::to_chars for doubles
  // is missing from emscripten's libc++); its digits and exponent are
  // re-read here whatever layout it chose.
  const bool neg = v < 0;
  const std::string shortest = fmt::format("{}", std::abs(v));
  const size_t e_at = shortest.find('e');
  const std::string mantissa = shortest.substr(0, e_at);
  int exp =
      e_at == std::string::npos ? 0 : std::stoi(shortest.substr(e_at + 1));
  const size_t dot = mantissa.find('.');
  exp += int(dot == std::string::npos ? mantissa.size() : dot) - 1;
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  const size_t lead = digits.find_first_not_of('0');
  digits.erase(0, lead);
  exp -= int(lead);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      return fmt::format("{}0.{}{}", neg ? "-" : "",
                         std::string(static_cast<size_t>(-exp - 1), '0'),
                         digits);
    }
    const size_t point = static_cast<size_t>(exp) + 1;
    if (point >= digits.size()) {
      return fmt::format("{}{}{}.0", neg ? "-" : "", digits,
                         std::string(point - digits.size(), '0'));
    }
    return fmt::format("{}{}.{}", neg ? "-" : "", digits.substr(0, point),
                       digits.substr(point));
  }
  return fmt::format("{}{}{}{}e{}{:02d}", neg ? "-" : "", digits.substr(0, 1),
                     digits.size() > 1 ? "." : "",
                     digits.size() > 1 ? digits.substr(1) : "",
                     exp < 0 ? '-' : '+', std::abs(exp));
}

namespace {

// Nesting bound for printing values (a namespace can hold itself).
constexpr int kMaxNesting = 256;

// Python's repr() of a str: single quotes unless the text holds ' and no ".
std::string str_repr(const std::string& s) {
  const bool dq =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Value::repr() const {
  // A namespace can hold itself: bound the depth of what is printed.
  thread_local int depth = 0;
  struct Guard {
    Guard() {
      if (++depth > kMaxNesting) {
        --depth;
        throw TemplateError(fmt::format(
            "printing a value nested deeper than {} levels (a cycle?)",
            kMaxNesting));
      }
    }
    ~Guard() { --depth; }
  } guard;
  switch (kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "None";
    case Kind::boolean:
      return as_bool() ? "True" : "False";
    case Kind::integer:
      return std::to_string(as_int());
    case Kind::floating:
      return float_repr(as_double());
    case Kind::string:
      return str_repr(str());
    case Kind::list: {
      if (generator_) return "<generator object>";
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list().size(); ++i) {
        if (i) out += ", ";
        out += list()[i].repr();
      }
      if (tuple_) return out + (list().size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::dict: {
      std::string out = dict().is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict().items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + (dict().is_namespace ? "}>" : "}");
    }
    case Kind::function:
      return fmt::format("<function {}>", function_name());
  }
  return "";
}

std::string Value::to_str() const {
  if (is_undefined()) return "";
  if (is_string()) return str();
  return repr();
}

bool equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_generator() || b.is_generator()) return false;
  switch (a.kind()) {
    case K::undefined:
    case K::none:
      return true;
    case K::string:
      return a.str() == b.str();
    case K::list: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!equal(a.list()[i], b.list()[i])) return false;
      }
      return true;
    }
    case K::dict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.is_namespace || y.is_namespace) return &x == &y;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find_key(k);
        if (!w || !equal(v, *w)) return false;
      }
      return true;
    }
    case K::function:
      return &a == &b;
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {
    const List& x = a.list();
    const List& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw TemplateError(
      fmt::format("'<' not supported between instances of '{}' and '{}'",
                  a.type_name(), b.type_name()));
}

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          out += fmt::format("\\u{:04x}", c);
        } else if (ensure_ascii && c >= 0x80) {
          // Decode one UTF-8 sequence; astral code points as surrogates.
          uint32_t cp = c;
          int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
          cp &= (0x3F >> extra);
          for (int k = 0; k < extra && i + 1 < s.size(); ++k) {
            cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
          }
          if (cp >= 0x10000) {
            cp -= 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10),
                               0xDC00 + (cp & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonStyle& st,
                int level) {
  using K = Value::Kind;
  if (level > kMaxNesting) {
    throw TemplateError(fmt::format(
        "tojson: nested deeper than {} levels (a cycle?)", kMaxNesting));
  }
  const std::string item_sep =
      !st.item_sep.empty() ? st.item_sep : (st.indent >= 0 ? "," : ", ");
  auto newline = [&](int lv) {
    if (st.indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(st.indent) * lv, ' ');
  };
  switch (v.kind()) {
    case K::none:
      out += "null";
      return;
    case K::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case K::integer:
      out += std::to_string(v.as_int());
      return;
    case K::floating: {
      const double d = v.as_double();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity")
                             : float_repr(d);
      return;
    }
    case K::string:
      json_string(out, v.str(), st.ensure_ascii);
      return;
    case K::list: {
      if (v.is_generator()) {
        throw TemplateError(
            "tojson: Object of type generator is not JSON serializable");
      }
      if (v.list().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& x : v.list()) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        json_value(out, x, st, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case K::dict: {
      if (v.dict().items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict().items) items.push_back(&kv);
      if (st.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) {
          return less(a->first, b->first);
        });
      }
      out += '{';
      bool first = true;
      for (const auto* kv : items) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        // json.dumps turns scalar keys into strings.
        const Value& k = kv->first;
        json_string(out,
                    k.is_string() ? k.str()
                    : k.is_bool() ? (k.as_bool() ? "true" : "false")
                    : k.is_none() ? "null"
                                  : k.repr(),
                    st.ensure_ascii);
        out += st.key_sep;
        json_value(out, kv->second, st, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw TemplateError(fmt::format(
          "tojson: Object of type {} is not JSON serializable", v.type_name()));
  }
}

Value from_nlohmann(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX))
        return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& x : j) l.push_back(from_nlohmann(x));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, x] : j.items()) d.set(k, from_nlohmann(x));
      return Value(std::move(d));
    }
    default:
      return Value::none();
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

Value parse_json(std::string_view text, std::string_view what) {
  // Depth is bounded by the parser's callback; nlohmann recurses per level.
  int depth = 0;
  nlohmann::ordered_json::parser_callback_t limit =
      [&depth, what](int d, nlohmann::ordered_json::parse_event_t e,
                     nlohmann::ordered_json&) {
        if (e == nlohmann::ordered_json::parse_event_t::object_start ||
            e == nlohmann::ordered_json::parse_event_t::array_start) {
          depth = std::max(depth, d + 1);
          if (depth > 256) {
            throw ValueError(
                fmt::format("{}: JSON nested deeper than 256 levels", what));
          }
        }
        return true;
      };
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.begin(), text.end(), limit);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(fmt::format("{}: bad JSON: {}", what, e.what()));
  }
  return from_nlohmann(j);
}

}  // namespace nascent::jinja
