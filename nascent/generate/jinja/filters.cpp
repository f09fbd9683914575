// Jinja2's filters and tests, and the globals a render starts with.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "nascent/generate/jinja/builtins.h"

namespace nascent::jinja {
namespace {

// The attribute a filter's attribute= argument names: "a.b" or "0".
Value attribute(Interpreter& in, const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t dot = path.find('.', pos);
    if (dot == std::string::npos) dot = path.size();
    const std::string part = path.substr(pos, dot - pos);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      cur = in.get_item(cur, Value(digits_to_index(part, "attribute")));
    } else {
      cur = in.get_item(cur, Value(part));
    }
    pos = dot + 1;
  }
  return cur;
}

// Sort keys: case-insensitive unless asked (Jinja's ignore_case).
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(lower(v.str()));
  return v;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

std::string indent(const std::string& text, const Value& width, bool first,
                   bool blank) {
  const std::string pad =
      width.is_string() ? width.str()
                        : std::string(static_cast<size_t>(std::max<int64_t>(
                                          0, want_int(width, "indent"))),
                                      ' ');
  const std::vector<std::string> lines = splitlines(text + "\n");
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out += "\n" + pad;
      out += lines[i];
    }
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      out += "\n";
      if (!lines[i].empty()) out += pad;
      out += lines[i];
    }
  }
  return first ? pad + out : out;
}

// select/reject/selectattr/rejectattr: items passing a test (truthiness
// when no test is named).
List select(Interpreter& in, const Value& seq, Args& a, bool by_attr,
            bool keep) {
  if (!seq.truthy()) return {};  // Jinja2 skips a falsy sequence.
  List items = iterate(seq);
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty()) fault("selectattr: no attribute given");
    attr = want_str(a.positional[next++], "selectattr");
  }
  std::string test;
  if (next < a.positional.size())
    test = want_str(a.positional[next++], "select");
  Args test_args;
  test_args.positional.assign(a.positional.begin() + next, a.positional.end());
  test_args.keyword = a.keyword;
  List out;
  for (const Value& item : items) {
    const Value v = by_attr ? attribute(in, item, attr) : item;
    bool pass;
    if (test.empty()) {
      pass = v.truthy();
    } else {
      Args copy = test_args;
      pass = in.test(test, v, copy);
    }
    if (pass == keep) out.push_back(item);
  }
  return out;
}

double round_half_even(double x) {
  return std::nearbyint(x);
}

Value to_int(const Value& v, const Value& def, int64_t base) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return def;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = strip(v.str(), Value::none(), true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    try {
      size_t used = 0;
      const long long r = std::stoll(digits, &used, static_cast<int>(base));
      if (used == digits.size()) return Value(int64_t{r});
    } catch (const std::exception&) {
    }
    try {
      size_t used = 0;
      const double d = std::stod(digits, &used);
      if (used == digits.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
        return Value(static_cast<int64_t>(d));
      }
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value sorted(Interpreter& in, const Value& seq, bool reverse,
             bool case_sensitive, const Value& attr) {
  List items = iterate(seq);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& x : items) {
    Value k = attr.is_string() ? attribute(in, x, attr.str()) : x;
    keyed.emplace_back(sort_key(k, case_sensitive), x);
  }
  std::stable_sort(
      keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return reverse ? less(b.first, a.first) : less(a.first, b.first);
      });
  List out;
  for (auto& [k, x] : keyed) out.push_back(x);
  return Value(std::move(out));
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& v,
                   Args& args) {
  ArgReader r(args, name);
  auto str_of = [&]() { return v.to_str(); };
  if (name == "safe") {
    r.done();
    return Value::markup(str_of());
  }
  if (name == "string") {
    r.done();
    return v.is_markup() ? v : Value(str_of());
  }
  if (name == "trim") {
    Value chars = r.get(0, "chars", Value::none());
    r.done();
    return Value(strip(str_of(), chars, true, true));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" ||
      name == "title") {
    r.done();
    const std::string s = str_of();
    if (name == "upper") return Value(upper(s));
    if (name == "lower") return Value(lower(s));
    if (name == "title") return Value(title(s));
    return Value(capitalize(s));
  }
  if (name == "length" || name == "count") {
    r.done();
    return Value(length(v));
  }
  if (name == "default" || name == "d") {
    const Value def = r.get(0, "default_value", Value(""));
    const bool boolean = r.get(1, "boolean", Value(false)).truthy();
    r.done();
    if (v.is_undefined() || (boolean && !v.truthy())) return def;
    return v;
  }
  if (name == "tojson") {
    // Hugging Face's: json.dumps(x, ensure_ascii=False, indent=indent,
    // separators=separators, sort_keys=sort_keys).
    const Value ind = r.get(0, "indent", Value::none());
    const Value ascii = r.get(1, "ensure_ascii", Value(false));
    const Value seps = r.get(2, "separators", Value::none());
    const Value sort = r.get(3, "sort_keys", Value(false));
    r.done();
    JsonStyle st;
    if (!ind.is_none())
      st.indent =
          static_cast<int>(std::clamp<int64_t>(want_int(ind, "tojson"), 0, 64));
    st.ensure_ascii = ascii.truthy();
    st.sort_keys = sort.truthy();
    if (!seps.is_none()) {
      if (!seps.is_list() || seps.list().size() != 2) {
        fault("tojson: separators must be a pair of strings");
      }
      st.item_sep = want_str(seps.list()[0], "tojson");
      st.key_sep = want_str(seps.list()[1], "tojson");
      if (st.item_sep.empty()) fault("tojson: empty item separator");
    }
    std::string out = to_json(v, st);
    in.check_size(out.size(), "tojson");
    return Value(std::move(out));
  }
  if (name == "items") {
    r.done();
    if (v.is_undefined()) return Value::generator({});
    if (!v.is_dict()) fault("items: can only get item pairs from a mapping");
    List out;
    for (const auto& [k, x] : v.dict().items)
      out.push_back(Value::tuple(List{k, x}));
    return Value::generator(std::move(out));
  }
  if (name == "join") {
    const Value sep = r.get(0, "d", Value(""));
    const Value attr = r.get(1, "attribute", Value::none());
    r.done();
    List items = iterate(v);
    if (attr.is_string()) {
      for (Value& x : items) x = attribute(in, x, attr.str());
    }
    return Value(join(in, items, want_str(sep, "join")));
  }
  if (name == "first" || name == "last") {
    r.done();
    if (v.is_generator()) {
      if (name == "last") fault("last: a generator is not reversible");
      List rest = v.consume();
      if (rest.empty())
        return Value::undefined("No first item, sequence was empty.");
      Value head = rest.front();
      v.restore(List(rest.begin() + 1, rest.end()));
      return head;
    }
    const List items = iterate(v);
    if (items.empty())
      return Value::undefined(
          fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    r.done();
    return Value(iterate(v));
  }
  if (name == "reverse") {
    r.done();
    if (v.is_string()) {
      std::vector<std::string> cs = characters(v.str());
      std::string out;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
      return Value(std::move(out));
    }
    if (v.is_generator()) fault("reverse: argument is not reversible");
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::generator(std::move(items));
  }
  if (name == "replace") {
    const Value old = r.get(0, "old"), with = r.get(1, "new");
    const Value count = r.get(2, "count", Value::none());
    r.done();
    return Value(replace(str_of(), want_str(old, name), want_str(with, name),
                         count.is_none() ? -1 : want_int(count, name), in));
  }
  if (name == "int") {
    const Value def = r.get(0, "default", Value(0));
    const Value base = r.get(1, "base", Value(10));
    r.done();
    return to_int(v, def, want_int(base, name));
  }
  if (name == "float") {
    const Value def = r.get(0, "default", Value(0.0));
    r.done();
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
      try {
        size_t used = 0;
        const std::string s = strip(v.str(), Value::none(), true, true);
        const double d = std::stod(s, &used);
        if (used == s.size()) return Value(d);
      } catch (const std::exception&) {
      }
    }
    return def;
  }
  if (name == "abs") {
    r.done();
    if (!v.is_number())
      fault(fmt::format("abs: bad operand type '{}'", v.type_name()));
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.as_int() == INT64_MIN) fault("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (name == "round") {
    const int64_t precision = want_int(r.get(0, "precision", Value(0)), name);
    const std::string method =
        want_str(r.get(1, "method", Value("common")), name);
    r.done();
    if (!v.is_number()) fault("round: expected a number");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    double y =
        method == "common"  ? round_half_even(x)
        : method == "floor" ? std::floor(x)
        : method == "ceil"
            ? std::ceil(x)
            : (fault("round: method must be common, ceil or floor"), 0.0);
    return Value(y / scale);
  }
  if (name == "select" || name == "reject" || name == "selectattr" ||
      name == "rejectattr") {
    return Value::generator(select(in, v, args, name.ends_with("attr"),
                                   name.starts_with("select")));
  }
  if (name == "map") {
    List items = v.truthy() ? iterate(v) : List{};
    const Value attr = r.get(99, "attribute", Value());
    if (!attr.is_undefined()) {
      const Value def = r.get(98, "default", Value());
      List out;
      for (const Value& x : items) {
        Value y = attribute(in, x, want_str(attr, name));
        out.push_back(y.is_undefined() && !def.is_undefined() ? def : y);
      }
      return Value::generator(std::move(out));
    }
    if (args.positional.empty()) fault("map: no filter or attribute given");
    const std::string f = want_str(args.positional[0], name);
    List out;
    for (const Value& x : items) {
      Args fa;
      fa.positional.assign(args.positional.begin() + 1, args.positional.end());
      fa.keyword = args.keyword;
      out.push_back(in.filter(f, x, fa));
    }
    return Value::generator(std::move(out));
  }
  if (name == "unique") {
    const bool cs = r.get(0, "case_sensitive", Value(false)).truthy();
    const Value attr = r.get(1, "attribute", Value::none());
    r.done();
    List out, seen;
    for (const Value& x : iterate(v)) {
      Value k =
          sort_key(attr.is_string() ? attribute(in, x, attr.str()) : x, cs);
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Value& s) { return equal(s, k); })) {
        seen.push_back(k);
        out.push_back(x);
      }
    }
    return Value::generator(std::move(out));
  }
  if (name == "sort") {
    const bool rev = r.get(0, "reverse", Value(false)).truthy();
    const bool cs = r.get(1, "case_sensitive", Value(false)).truthy();
    const Value attr = r.get(2, "attribute", Value::none());
    r.done();
    return sorted(in, v, rev, cs, attr);
  }
  if (name == "dictsort") {
    const bool cs = r.get(0, "case_sensitive", Value(false)).truthy();
    const std::string by = want_str(r.get(1, "by", Value("key")), name);
    const bool rev = r.get(2, "reverse", Value(false)).truthy();
    r.done();
    if (!v.is_dict()) fault("dictsort: expected a mapping");
    List pairs;
    for (const auto& [k, x] : v.dict().items)
      pairs.push_back(Value::tuple(List{k, x}));
    return sorted(in, Value(std::move(pairs)), rev, cs,
                  Value(by == "value" ? "1" : "0"));
  }
  if (name == "min" || name == "max") {
    const bool cs = r.get(0, "case_sensitive", Value(false)).truthy();
    const Value attr = r.get(1, "attribute", Value::none());
    r.done();
    const Value s = sorted(in, v, name == "max", cs, attr);
    if (s.list().empty())
      return Value::undefined(
          fmt::format("No {} item, sequence was empty.", name));
    return s.list().front();
  }
  if (name == "sum") {
    const Value attr = r.get(0, "attribute", Value::none());
    Value acc = r.get(1, "start", Value(0));
    r.done();
    for (const Value& x : iterate(v)) {
      const Value y = attr.is_string() ? attribute(in, x, attr.str()) : x;
      if (!acc.is_number() || !y.is_number()) fault("sum: expected numbers");
      acc = acc.is_float() || y.is_float()
                ? Value(acc.as_double() + y.as_double())
                : Value(acc.as_int() + y.as_int());
    }
    return acc;
  }
  if (name == "indent") {
    const Value width = r.get(0, "width", Value(4));
    const bool first = r.get(1, "first", Value(false)).truthy();
    const bool blank = r.get(2, "blank", Value(false)).truthy();
    r.done();
    std::string out = indent(str_of(), width, first, blank);
    in.check_size(out.size(), "indent");
    return Value(std::move(out));
  }
  if (name == "e" || name == "escape" || name == "forceescape") {
    r.done();
    if (v.is_markup() && name != "forceescape") return v;
    return Value::markup(html_escape(str_of()));
  }
  if (name == "attr") {
    const Value n = r.get(0, "name");
    r.done();
    return in.get_attr(v, want_str(n, name));
  }
  if (name == "wordcount") {
    r.done();
    return Value(static_cast<int64_t>(
        split(str_of(), Value::none(), Value(-1), false).size()));
  }
  if (name == "format") {
    fault("filter 'format' (printf-style) is not supported");
  }
  fault(fmt::format("no filter named '{}'", name));
}

bool apply_test(Interpreter& /*in*/, const std::string& name, const Value& v,
                Args& args) {
  ArgReader r(args, "test " + name);
  auto other = [&]() {
    Value o = r.get(0, "other");
    r.done();
    return o;
  };
  if (name == "defined" || name == "undefined") {
    r.done();
    return v.is_undefined() == (name == "undefined");
  }
  if (name == "none") return r.done(), v.is_none();
  if (name == "boolean") return r.done(), v.is_bool();
  if (name == "true") return r.done(), v.is_bool() && v.as_bool();
  if (name == "false") return r.done(), v.is_bool() && !v.as_bool();
  if (name == "integer") return r.done(), v.is_int();
  if (name == "float") return r.done(), v.is_float();
  if (name == "number") return r.done(), v.is_number();
  if (name == "string") return r.done(), v.is_string();
  if (name == "mapping") return r.done(), v.is_dict() && !v.dict().is_namespace;
  if (name == "callable") return r.done(), v.is_function();
  if (name == "iterable") {
    r.done();
    return v.is_undefined() || v.is_string() || v.is_list() ||
           (v.is_dict() && !v.dict().is_namespace);
  }
  if (name == "sequence") {
    r.done();
    if (v.is_generator()) return false;
    return v.is_undefined() || v.is_string() || v.is_list() ||
           (v.is_dict() && !v.dict().is_namespace);
  }
  if (name == "lower" || name == "upper") {
    r.done();
    if (!v.is_string()) return false;
    const std::string s = v.str();
    return name == "lower" ? lower(s) == s : upper(s) == s;
  }
  if (name == "odd" || name == "even") {
    r.done();
    const int64_t x = want_int(v, name);
    return (x % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t d = want_int(other(), name);
    if (d == 0) fault("divisibleby: division by zero");
    return want_int(v, name) % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==")
    return equal(v, other());
  if (name == "ne" || name == "!=") return !equal(v, other());
  if (name == "lt" || name == "lessthan" || name == "<")
    return less(v, other());
  if (name == "gt" || name == "greaterthan" || name == ">")
    return less(other(), v);
  if (name == "le" || name == "<=") return !less(other(), v);
  if (name == "ge" || name == ">=") return !less(v, other());
  if (name == "sameas") {
    const Value o = other();
    if (v.kind() != o.kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.is_bool()) return v.as_bool() == o.as_bool();
    return equal(v, o) && (v.is_int() || v.is_string());
  }
  if (name == "in") {
    const Value o = other();
    if (o.is_string())
      return v.is_string() && o.str().find(v.str()) != std::string::npos;
    if (o.is_dict()) return o.dict().find_key(v) != nullptr;
    for (const Value& x : iterate(o)) {
      if (equal(x, v)) return true;
    }
    return false;
  }
  if (name == "escaped") return r.done(), false;
  fault(fmt::format("no test named '{}'", name));
}

void add_globals(Dict& g, Interpreter& in) {
  g.set("range", Value::function("range", [&in](Args& a) -> Value {
          if (!a.keyword.empty() || a.positional.empty() ||
              a.positional.size() > 3) {
            fault("range: expects 1 to 3 integer arguments");
          }
          int64_t start = 0, stop = 0, step = 1;
          if (a.positional.size() == 1) {
            stop = want_int(a.positional[0], "range");
          } else {
            start = want_int(a.positional[0], "range");
            stop = want_int(a.positional[1], "range");
            if (a.positional.size() == 3)
              step = want_int(a.positional[2], "range");
          }
          if (step == 0) fault("range: step must not be zero");
          const double n = std::ceil(
              (static_cast<double>(stop) - static_cast<double>(start)) /
              static_cast<double>(step));
          if (n > static_cast<double>(in.limits().max_iterations)) {
            fault(fmt::format("range: {} items is over the limit of {}", n,
                              in.limits().max_iterations));
          }
          List out;
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            out.emplace_back(i);
          }
          return Value(std::move(out));
        }));
  g.set("namespace", Value::function("namespace", [&in](Args& a) -> Value {
          Dict d;
          d.is_namespace = true;
          for (const Value& p : a.positional) {
            if (!p.is_dict())
              fault("namespace: positional arguments must be mappings");
            for (const auto& [k, x] : p.dict().items) d.set(k, x);
          }
          for (auto& [k, x] : a.keyword) d.set(k, x);
          Value ns(std::move(d));
          in.track_namespace(ns);
          return ns;
        }));
  g.set("dict", Value::function("dict", [](Args& a) -> Value {
          Dict d;
          for (const Value& p : a.positional) {
            if (!p.is_dict())
              fault("dict: positional arguments must be mappings");
            for (const auto& [k, x] : p.dict().items) d.set(k, x);
          }
          for (auto& [k, x] : a.keyword) d.set(k, x);
          return Value(std::move(d));
        }));
  g.set("raise_exception",
        Value::function("raise_exception", [](Args& a) -> Value {
          const std::string msg =
              a.positional.empty() ? "" : a.positional[0].to_str();
          throw TemplateException(fmt::format("raise_exception: {}", msg));
        }));
  g.set(
      "strftime_now", Value::function("strftime_now", [&in](Args& a) -> Value {
        if (a.positional.size() != 1 || !a.positional[0].is_string()) {
          fault("strftime_now: expects one format string");
        }
        const std::time_t t = in.now();
        std::tm tm{};
        localtime_r(&t, &tm);
        char buf[512];
        const size_t n =
            std::strftime(buf, sizeof(buf), a.positional[0].str().c_str(), &tm);
        if (n == 0 && !a.positional[0].str().empty()) {
          fault("strftime_now: the formatted date is empty or too long");
        }
        return Value(std::string(buf, n));
      }));
}

}  // namespace nascent::jinja
