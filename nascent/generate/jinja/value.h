// The values a Jinja template computes with, with Python's semantics as
// Jinja2 gives them: undefined, none, bool, int, float, str (UTF-8, lengths
// and indices in code points), list, dict (insertion-ordered, string keys)
// and callables (macros, built-in functions, bound methods). Lists and dicts
// are shared, immutable once built, except namespace() objects, whose
// attributes `{% set ns.x = ... %}` assigns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "nascent/core/error.h"

namespace nascent::jinja {

// A template that cannot be parsed or rendered: the message names the
// construct and the template line ("template line 12: unknown filter ...").
class TemplateError : public ValueError {
 public:
  using ValueError::ValueError;
};

class Value;
using List = std::vector<Value>;

// Keys are str mostly; int, float, bool and none keys work too (Python's
// hashable scalars).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  bool is_namespace = false;

  const Value* find(std::string_view key) const;
  const Value* find_key(const Value& key) const;
  void set(Value key, Value value);
};

// Arguments of a call: positional, then keyword.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using Function = std::function<Value(Args&)>;

class Value {
 public:
  enum class Kind {
    undefined,
    none,
    boolean,
    integer,
    floating,
    string,
    list,
    dict,
    function
  };

  Value() = default;  // Undefined.
  Value(bool b) : v_(b) {}
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : v_(std::make_shared<Dict>(std::move(d))) {}

  static Value none() { return Value(None{}); }
  // An undefined value remembering what it stood for, for error messages.
  static Value undefined(std::string name) { return Value(Undef{name}); }
  static Value function(std::string name, Function f);
  // A str marked safe (Jinja's Markup, from |safe and |escape): `+` with a
  // plain str HTML-escapes the plain one, as MarkupSafe does.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  bool is_markup() const { return markup_; }
  // A one-shot iterator over items (what Jinja2's map, select, items...
  // return): iterating consumes it; it has no len(), no index and no JSON.
  static Value generator(List items) {
    Value v(std::move(items));
    v.generator_ = true;
    return v;
  }
  bool is_generator() const { return generator_; }
  // A list that prints as a tuple: (a, b) literals, items() pairs.
  static Value tuple(List items) {
    Value v(std::move(items));
    v.tuple_ = true;
    return v;
  }
  bool is_tuple() const { return tuple_; }
  // Takes the items out of a generator (it is empty afterwards).
  List consume() const;
  void restore(List rest) const { *std::get<ListPtr>(v_) = std::move(rest); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::undefined; }
  bool is_none() const { return kind() == Kind::none; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_int() const { return kind() == Kind::integer; }
  bool is_float() const { return kind() == Kind::floating; }
  // int, float or bool (Python's bool is an int).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::string; }
  bool is_list() const { return kind() == Kind::list; }
  bool is_dict() const { return kind() == Kind::dict; }
  bool is_function() const { return kind() == Kind::function; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;  // int or bool.
  int64_t as_int_or_zero() const {
    return is_int() || is_bool() ? as_int() : 0;
  }
  double as_double() const;  // int, float or bool.
  const std::string& str() const { return std::get<std::string>(v_); }
  const List& list() const { return *std::get<ListPtr>(v_); }
  const Dict& dict() const { return *std::get<DictPtr>(v_); }
  Dict& mutable_dict() const { return *std::get<DictPtr>(v_); }
  const std::string& undefined_name() const { return std::get<Undef>(v_).name; }
  const std::string& function_name() const;
  Value call(Args& args) const;

  // Python's truth value (undefined is false).
  bool truthy() const;
  // Python's str() (undefined: ""), and repr().
  std::string to_str() const;
  std::string repr() const;
  // Jinja's name of the type, for messages: "str", "list", "undefined"...
  std::string_view type_name() const;

 private:
  struct Undef {
    std::string name;
  };
  struct None {};
  struct Callable {
    std::string name;
    Function fn;
  };
  using ListPtr = std::shared_ptr<List>;
  using DictPtr = std::shared_ptr<Dict>;
  using FuncPtr = std::shared_ptr<const Callable>;
  explicit Value(Undef u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}

  std::variant<Undef, None, bool, int64_t, double, std::string, ListPtr,
               DictPtr, FuncPtr>
      v_;
  bool markup_ = false;
  bool generator_ = false;
  bool tuple_ = false;
};

// Python's ==, and < (TemplateError for types that do not order).
bool equal(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);

// Python's repr() of a float ("1.0", "1e-05", "inf").
std::string float_repr(double v);

// json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys)
// as Hugging Face's tojson filter calls it; indent < 0: none. TemplateError
// for undefined values and callables.
struct JsonStyle {
  int indent = -1;
  std::string item_sep;  // Empty: Python's default (", " or "," with indent).
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

// Parses JSON text (objects keep their key order); ValueError naming `what`
// and the fault for bad JSON.
Value parse_json(std::string_view text, std::string_view what);

}  // namespace nascent::jinja
