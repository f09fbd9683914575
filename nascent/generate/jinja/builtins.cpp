// Jinja2's built-in filters, tests and globals that chat templates use,
// the methods of str, dict and list that templates call, and Hugging
// Face's additions (tojson's arguments, raise_exception, strftime_now).
// Methods that would mutate a list or dict are refused, as Hugging Face's
// ImmutableSandboxedEnvironment refuses them.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "nascent/generate/jinja/builtins.h"
#include "nascent/generate/jinja/lexer.h"

namespace nascent::jinja {

const std::string& want_str(const Value& v, const std::string& fn) {
  if (!v.is_string()) {
    fault(fmt::format("{}: expected a string, got {}", fn, v.type_name()));
  }
  return v.str();
}

int64_t want_int(const Value& v, const std::string& fn) {
  if (!v.is_int() && !v.is_bool()) {
    fault(fmt::format("{}: expected an integer, got {}", fn, v.type_name()));
  }
  return v.as_int();
}

namespace {
bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

}  // namespace

// str.strip/lstrip/rstrip: Python whitespace, or the given characters.
std::string strip(const std::string& s, const Value& chars, bool left,
                  bool right) {
  size_t b = 0, e = s.size(), len = 0;
  if (chars.is_none() || chars.is_undefined()) {
    while (left && b < e && py_space_at(s, b, &len)) b += len;
    while (right && e > b && py_space_before(s, e, &len)) e -= len;
    return s.substr(b, e - b);
  }
  const std::vector<std::string> set = characters(want_str(chars, "strip"));
  auto in_set = [&](const std::string& c) {
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  std::vector<std::string> cs = characters(s);
  size_t i = 0, j = cs.size();
  while (left && i < j && in_set(cs[i])) ++i;
  while (right && j > i && in_set(cs[j - 1])) --j;
  std::string out;
  for (size_t k = i; k < j; ++k) out += cs[k];
  return out;
}

// str.split / rsplit.
List split(const std::string& s, const Value& sep_v, const Value& max_v,
           bool from_right) {
  int64_t maxsplit =
      max_v.is_undefined() || max_v.is_none() ? -1 : want_int(max_v, "split");
  std::vector<std::string> parts;
  if (sep_v.is_undefined() || sep_v.is_none()) {
    // Runs of whitespace; no empty parts.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0, len = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space_at(s, i, &len)) i += len;
      if (i >= s.size()) break;
      size_t j = i;
      while (j < s.size() && !py_space_at(s, j, &len)) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (from_right) {
        const size_t keep = static_cast<size_t>(maxsplit);
        const size_t first = words.size() - keep;
        std::string head = s.substr(0, words[first - 1].second);
        head = strip(head, Value::none(), true, false);
        parts.push_back(head);
        for (size_t k = first; k < words.size(); ++k) {
          parts.push_back(
              s.substr(words[k].first, words[k].second - words[k].first));
        }
      } else {
        for (int64_t k = 0; k < maxsplit; ++k) {
          parts.push_back(
              s.substr(words[k].first, words[k].second - words[k].first));
        }
        parts.push_back(
            strip(s.substr(words[maxsplit].first), Value::none(), false, true));
      }
    } else {
      for (auto [b, e] : words) parts.push_back(s.substr(b, e - b));
    }
  } else {
    const std::string& sep = want_str(sep_v, "split");
    if (sep.empty()) fault("split: empty separator");
    if (!from_right) {
      size_t pos = 0;
      int64_t n = 0;
      while (maxsplit < 0 || n < maxsplit) {
        size_t f = s.find(sep, pos);
        if (f == std::string::npos) break;
        parts.push_back(s.substr(pos, f - pos));
        pos = f + sep.size();
        ++n;
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      int64_t n = 0;
      std::vector<std::string> rev;
      while (maxsplit < 0 || n < maxsplit) {
        if (end < sep.size()) break;
        size_t f = s.rfind(sep, end - sep.size());
        if (f == std::string::npos) break;
        rev.push_back(s.substr(f + sep.size(), end - f - sep.size()));
        end = f;
        ++n;
      }
      rev.push_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
  }
  List out;
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return out;
}

std::string replace(const std::string& s, const std::string& old,
                    const std::string& with, int64_t count, Interpreter& in) {
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  if (old.empty()) {
    // Python inserts `with` around every character.
    std::vector<std::string> cs = characters(s);
    for (const std::string& c : cs) {
      if (count < 0 || n < count) {
        out += with;
        ++n;
      }
      out += c;
      in.check_size(out.size(), "replace");
    }
    if (count < 0 || n < count) out += with;
    return out;
  }
  while (count < 0 || n < count) {
    size_t f = s.find(old, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += with;
    in.check_size(out.size(), "replace");
    pos = f + old.size();
    ++n;
  }
  out.append(s, pos);
  return out;
}

std::string ascii_map(const std::string& s, int (*f)(int)) {
  std::string out = s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(f(c));
  }
  return out;
}

std::string upper(const std::string& s) {
  return ascii_map(s, ::toupper);
}
std::string lower(const std::string& s) {
  return ascii_map(s, ::tolower);
}

std::string capitalize(const std::string& s) {
  std::string out = lower(s);
  if (!out.empty() && static_cast<unsigned char>(out[0]) < 0x80) {
    out[0] = static_cast<char>(::toupper(out[0]));
  }
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (alpha) c = static_cast<char>(prev_cased ? ::tolower(c) : ::toupper(c));
    prev_cased = alpha || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

// Python's str.splitlines() (without keepends).
std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t skip = 0;
    if (c == '\r') {
      skip = (i + 1 < s.size() && s[i + 1] == '\n') ? 1 : 0;
    } else if (c == '\n' || c == '\v' || c == '\f' ||
               (c >= 0x1C && c <= 0x1E)) {
    } else if (c == 0xC2 && i + 1 < s.size() &&
               static_cast<unsigned char>(s[i + 1]) == 0x85) {
      skip = 1;
    } else if (c == 0xE2 && i + 2 < s.size() &&
               static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xA8) {
      skip = 2;
    } else {
      cur += static_cast<char>(c);
      continue;
    }
    out.push_back(std::move(cur));
    cur.clear();
    i += skip;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// '{} and {0} and {name}'.format(...): replacement fields without format
// specs.
std::string format(const std::string& f, Args& a) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) fault("format: '{' is not closed");
      const std::string field = f.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos) {
        fault("format: format specs and conversions are not supported");
      }
      const Value* v = nullptr;
      size_t idx = 0;
      if (field.empty()) {
        idx = next++;
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        idx = static_cast<size_t>(digits_to_index(field, "format"));
      } else {
        for (auto& [k, x] : a.keyword) {
          if (k == field) v = &x;
        }
        if (!v) fault(fmt::format("format: no argument named '{}'", field));
      }
      if (!v) {
        if (idx >= a.positional.size()) {
          fault(fmt::format("format: replacement index {} out of range", idx));
        }
        v = &a.positional[idx];
      }
      out += v->to_str();
      i = close;
    } else if (c == '}') {
      fault("format: single '}' encountered");
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

Value unsafe(const std::string& name, const Value& obj) {
  return Value::undefined(
      fmt::format("access to attribute '{}' of '{}' object is unsafe.", name,
                  obj.type_name()));
}

}  // namespace

std::string join(Interpreter& in, const List& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i].to_str();
    in.check_size(out.size(), "join");
  }
  return out;
}

namespace {

Value string_method(Interpreter& interp, const Value& obj,
                    const std::string& n) {
  const std::string self = obj.str();
  auto bind = [&](auto fn) {
    return Value::function("str." + n,
                           [self, fn, n, &interp](Args& a) -> Value {
                             ArgReader r(a, "str." + n);
                             return fn(r, self, interp);
                           });
  };
  if (n == "strip" || n == "lstrip" || n == "rstrip") {
    return bind([n](ArgReader& r, const std::string& s, Interpreter&) {
      Value chars = r.get(0, "chars", Value::none());
      r.done();
      return Value(strip(s, chars, n != "rstrip", n != "lstrip"));
    });
  }
  if (n == "split" || n == "rsplit") {
    return bind([n](ArgReader& r, const std::string& s, Interpreter&) {
      Value sep = r.get(0, "sep", Value::none());
      Value max = r.get(1, "maxsplit", Value(-1));
      r.done();
      return Value(split(s, sep, max, n == "rsplit"));
    });
  }
  if (n == "startswith" || n == "endswith") {
    return bind([n](ArgReader& r, const std::string& s, Interpreter&) {
      Value p = r.get(0, "prefix");
      r.done();
      List options = p.is_list() ? p.list() : List{p};
      for (const Value& o : options) {
        const std::string& x = want_str(o, r.fn());
        if (n == "startswith" ? s.starts_with(x) : s.ends_with(x)) {
          return Value(true);
        }
      }
      return Value(false);
    });
  }
  if (n == "upper" || n == "lower" || n == "title" || n == "capitalize" ||
      n == "splitlines" || n == "isdigit" || n == "isspace" || n == "isalpha" ||
      n == "isalnum" || n == "isupper" || n == "islower") {
    return bind([n](ArgReader& r, const std::string& s, Interpreter&) {
      r.done();
      if (n == "upper") return Value(upper(s));
      if (n == "lower") return Value(lower(s));
      if (n == "title") return Value(title(s));
      if (n == "capitalize") return Value(capitalize(s));
      if (n == "splitlines") {
        List l;
        for (std::string& x : splitlines(s)) l.emplace_back(std::move(x));
        return Value(std::move(l));
      }
      if (s.empty()) return Value(false);
      bool all = true, cased = false;
      for (char c : s) {
        const int u = static_cast<unsigned char>(c);
        if (n == "isdigit") all &= std::isdigit(u) != 0;
        if (n == "isspace") all &= is_ascii_space(c);
        if (n == "isalpha") all &= std::isalpha(u) != 0;
        if (n == "isalnum") all &= std::isalnum(u) != 0;
        if (n == "isupper")
          all &= !std::islower(u), cased |= std::isupper(u) != 0;
        if (n == "islower")
          all &= !std::isupper(u), cased |= std::islower(u) != 0;
      }
      if (n == "isupper" || n == "islower") return Value(all && cased);
      return Value(all);
    });
  }
  if (n == "replace") {
    return bind([](ArgReader& r, const std::string& s, Interpreter& in) {
      const Value old = r.get(0, "old"), with = r.get(1, "new");
      const Value count = r.get(2, "count", Value(-1));
      r.done();
      return Value(replace(s, want_str(old, r.fn()), want_str(with, r.fn()),
                           want_int(count, r.fn()), in));
    });
  }
  if (n == "find" || n == "rfind" || n == "count") {
    return bind([n](ArgReader& r, const std::string& s, Interpreter&) {
      const std::string sub = want_str(r.get(0, "sub"), r.fn());
      r.done();
      auto cp_index = [&](size_t byte) {
        return static_cast<int64_t>(characters(s.substr(0, byte)).size());
      };
      if (n == "count") {
        if (sub.empty()) return Value(int64_t(characters(s).size() + 1));
        int64_t c = 0;
        for (size_t p = s.find(sub); p != std::string::npos;
             p = s.find(sub, p + sub.size())) {
          ++c;
        }
        return Value(c);
      }
      const size_t f = n == "find" ? s.find(sub) : s.rfind(sub);
      return Value(f == std::string::npos ? int64_t{-1} : cp_index(f));
    });
  }
  if (n == "format") {
    return Value::function("str.format", [self](Args& a) -> Value {
      return Value(format(self, a));
    });
  }
  if (n == "join") {
    return bind([](ArgReader& r, const std::string& s, Interpreter& in) {
      const Value items = r.get(0, "iterable");
      r.done();
      return Value(join(in, iterate(items), s));
    });
  }
  return Value();
}

Value dict_method(const Value& obj, const std::string& n) {
  if (n == "items" || n == "keys" || n == "values") {
    return Value::function("dict." + n, [obj, n](Args& a) -> Value {
      ArgReader r(a, "dict." + n);
      r.done();
      List out;
      for (const auto& [k, v] : obj.dict().items) {
        if (n == "items") out.push_back(Value::tuple(List{k, v}));
        if (n == "keys") out.push_back(k);
        if (n == "values") out.push_back(v);
      }
      return Value(std::move(out));
    });
  }
  if (n == "get") {
    return Value::function("dict.get", [obj](Args& a) -> Value {
      ArgReader r(a, "dict.get");
      const Value key = r.get(0, "key");
      const Value def = r.get(1, "default", Value::none());
      r.done();
      if (const Value* v = obj.dict().find_key(key)) return *v;
      return def;
    });
  }
  if (n == "pop" || n == "update" || n == "setdefault" || n == "clear" ||
      n == "popitem") {
    return unsafe(n, obj);
  }
  return Value();
}

Value list_method(const Value& obj, const std::string& n) {
  if (n == "append" || n == "extend" || n == "insert" || n == "pop" ||
      n == "remove" || n == "clear" || n == "sort" || n == "reverse") {
    return unsafe(n, obj);
  }
  if (n == "index" || n == "count") {
    return Value::function("list." + n, [obj, n](Args& a) -> Value {
      ArgReader r(a, "list." + n);
      const Value x = r.get(0, "value");
      r.done();
      int64_t c = 0;
      for (size_t i = 0; i < obj.list().size(); ++i) {
        if (equal(obj.list()[i], x)) {
          if (n == "index") return Value(static_cast<int64_t>(i));
          ++c;
        }
      }
      if (n == "index") fault(fmt::format("{} is not in list", x.repr()));
      return Value(c);
    });
  }
  return Value();
}

}  // namespace

Value method(Interpreter& in, const Value& obj, const std::string& name) {
  if (!name.empty() && name[0] == '_') {
    return Value::undefined(
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name,
                    obj.type_name()));
  }
  if (obj.is_string()) return string_method(in, obj, name);
  if (obj.is_dict() && !obj.dict().is_namespace) return dict_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return Value();
}

}  // namespace nascent::jinja
