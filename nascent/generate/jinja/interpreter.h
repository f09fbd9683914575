// Renders a parsed template: a tree walk over the Program with Jinja2's
// scoping (a frame per loop iteration and per macro call, namespace() for
// state across iterations), loop controls and the limits that keep a
// hostile template from running away.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nascent/generate/jinja/ast.h"

namespace nascent::jinja {

struct Limits {
  size_t max_template_bytes = size_t{1} << 20;
  int max_depth = 500;  // Nesting of blocks, expressions and macro calls.
  int64_t max_iterations = 1'000'000;  // Loop iterations and macro calls.
  size_t max_output_bytes = size_t{16} << 20;  // Also any one string.
  // Wall-clock time of a render: each step is bounded by the limits above,
  // but many steps over large strings could still run for hours.
  double max_seconds = 10.0;
};

// raise_exception() called by the template: it rejects the input.
class TemplateException : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

class Interpreter {
 public:
  // now: the time strftime_now() formats (local time).
  Interpreter(const Limits& limits, std::time_t now);

  std::string render(const Program& program, const Dict& variables);

  // For the built-in filters, tests and functions (builtins.cpp).
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  Value filter(const std::string& name, const Value& target, Args& args);
  bool test(const std::string& name, const Value& target, Args& args);
  // Throws when a string or list of this size would pass the limits.
  void check_size(size_t bytes, const char* what) const;
  void count_iteration(const char* what);
  // A namespace() object: its attributes may point back at it, so the end
  // of the render clears them (shared_ptr cycles would leak).
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }
  const Limits& limits() const { return limits_; }
  std::time_t now() const { return now_; }

 private:
  struct Frame {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Frame> parent;
  };
  enum class Flow { normal, break_, continue_ };
  struct Depth {
    explicit Depth(Interpreter& in);
    ~Depth() { --in_.depth_; }
    Interpreter& in_;
  };

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v) {
    frame_->vars[name] = std::move(v);
  }
  void assign_targets(const std::vector<std::string>& targets, const Value& v,
                      int line);
  Flow exec(const Body& body);
  Flow exec_node(const Node& n);
  void exec_for(const Node& n);
  std::string render_body(const Body& body, std::shared_ptr<Frame> frame);
  Value make_macro(const Node& n, std::shared_ptr<Frame> scope);
  // Breaks the cycles a render can make (a macro kept in the frame it
  // closes over, a namespace holding itself), on success or error.
  void release_cycles();
  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_call(const Expr& e, const Value* caller);
  Args eval_args(const Expr& e, size_t first);
  Value slice(const Value& obj, const Value& start, const Value& stop,
              const Value& step);
  void emit(const std::string& s);

  // Throws once the render has run longer than max_seconds (checked every
  // loop iteration, macro call and 256 nested evaluations).
  void check_time();

  Limits limits_;
  std::time_t now_;
  std::chrono::steady_clock::time_point deadline_;
  uint32_t steps_ = 0;
  std::shared_ptr<Frame> frame_;
  std::shared_ptr<Frame> root_;
  std::string* out_ = nullptr;
  Value hole_;  // The body value a filter block's chain applies to.
  std::vector<std::weak_ptr<Frame>> captured_;  // Frames macros close over.
  std::vector<Value> namespaces_;
  int depth_ = 0;
  int64_t iterations_ = 0;
};

// Python's iteration of a value (list items, dict keys, string characters;
// undefined: nothing). TemplateError for what does not iterate.
List iterate(const Value& v);
// Python's len(); TemplateError for what has none.
int64_t length(const Value& v);
// MarkupSafe's escape: & < > " ' as entities.
std::string html_escape(const std::string& s);
// The code points of a str as separate strings.
std::vector<std::string> characters(const std::string& s);

// Built-ins (builtins.cpp): the globals a render starts from, attribute
// methods of str/dict/list, filters and tests.
void add_globals(Dict& globals, Interpreter& in);
Value method(Interpreter& in, const Value& obj, const std::string& name);
Value apply_filter(Interpreter& in, const std::string& name,
                   const Value& target, Args& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& target,
                Args& args);

}  // namespace nascent::jinja
