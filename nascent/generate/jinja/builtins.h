// Helpers shared by the built-in methods (builtins.cpp) and filters
// (filters.cpp): argument reading and Python's str operations.
#pragma once

#include <charconv>
#include <set>
#include <string>

#include <fmt/format.h>

#include "nascent/generate/jinja/interpreter.h"

namespace nascent::jinja {

[[noreturn]] inline void fault(const std::string& what) {
  throw TemplateError(what);
}

// A string of ASCII digits as an index; TemplateError when it does not fit.
inline int64_t digits_to_index(const std::string& digits, const char* what) {
  int64_t v = 0;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    fault(fmt::format("{}: index {} is out of range", what, digits));
  }
  return v;
}

// Positional-or-keyword arguments of a filter, method or function.
class ArgReader {
 public:
  ArgReader(Args& a, std::string fn) : a_(a), fn_(std::move(fn)) {}
  // The argument at position pos (after the target) or named name.
  Value get(size_t pos, const char* name, Value def = Value()) {
    used_.insert(name);
    max_pos_ = std::max(max_pos_, pos + 1);
    for (auto& [k, v] : a_.keyword) {
      if (k == name) return v;
    }
    if (pos < a_.positional.size()) return a_.positional[pos];
    return def;
  }
  void done() {
    if (a_.positional.size() > max_pos_) {
      fault(fmt::format("{}: too many arguments ({} given)", fn_,
                        a_.positional.size()));
    }
    for (auto& [k, v] : a_.keyword) {
      if (!used_.count(k)) {
        fault(fmt::format("{}: unexpected keyword argument '{}'", fn_, k));
      }
    }
  }
  const std::string& fn() const { return fn_; }

 private:
  Args& a_;
  std::string fn_;
  std::set<std::string> used_;
  size_t max_pos_ = 0;
};

const std::string& want_str(const Value& v, const std::string& fn);
int64_t want_int(const Value& v, const std::string& fn);
// Python's str methods (ASCII case mapping).
std::string strip(const std::string& s, const Value& chars, bool left,
                  bool right);
List split(const std::string& s, const Value& sep, const Value& maxsplit,
           bool from_right);
std::string replace(const std::string& s, const std::string& old,
                    const std::string& with, int64_t count, Interpreter& in);
std::string upper(const std::string& s);
std::string lower(const std::string& s);
std::string capitalize(const std::string& s);
std::string title(const std::string& s);
std::vector<std::string> splitlines(const std::string& s);
std::string format(const std::string& f, Args& a);
std::string join(Interpreter& in, const List& items, const std::string& sep);

}  // namespace nascent::jinja
