#include "nascent/generate/jinja/interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "nascent/tokenizer/unicode.h"

namespace nascent::jinja {
namespace {

[[noreturn]] void fault(const std::string& what) {
  throw TemplateError(what);
}

bool located(const TemplateError& e) {
  return std::string_view(e.what()).starts_with("template line ");
}

[[noreturn]] void fail_undefined(const Value& v) {
  fault(v.undefined_name());
}

// Python's floor division and modulo.
int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) fault("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    size_t n = tokenizer::unicode::decode_utf8(s, i, &cp);
    if (n == 0) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return {};
    case Value::Kind::list:
      return v.is_generator() ? v.consume() : v.list();
    case Value::Kind::dict: {
      if (v.dict().is_namespace) break;
      List keys;
      for (const auto& kv : v.dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::string: {
      List out;
      for (std::string& c : characters(v.str())) out.emplace_back(std::move(c));
      return out;
    }
    default:
      break;
  }
  fault(fmt::format("'{}' object is not iterable", v.type_name()));
}

int64_t length(const Value& v) {
  if (v.is_generator()) fault("object of type 'generator' has no len()");
  switch (v.kind()) {
    case Value::Kind::undefined:
      return 0;
    case Value::Kind::list:
      return static_cast<int64_t>(v.list().size());
    case Value::Kind::dict:
      return static_cast<int64_t>(v.dict().items.size());
    case Value::Kind::string:
      return static_cast<int64_t>(characters(v.str()).size());
    default:
      fault(fmt::format("object of type '{}' has no len()", v.type_name()));
  }
}

Interpreter::Depth::Depth(Interpreter& in) : in_(in) {
  if (++in_.depth_ > in_.limits_.max_depth) {
    --in_.depth_;
    fault(fmt::format("nesting deeper than {} levels (recursion?)",
                      in_.limits_.max_depth));
  }
  if ((++in_.steps_ & 255) == 0) {
    try {
      in_.check_time();
    } catch (...) {
      --in_.depth_;
      throw;
    }
  }
}

Interpreter::Interpreter(const Limits& limits, std::time_t now)
    : limits_(limits),
      now_(now),
      deadline_(std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(
                        std::min(limits.max_seconds, 1e6)))) {}

void Interpreter::check_time() {
  if (std::chrono::steady_clock::now() > deadline_) {
    fault(fmt::format("rendering took longer than {} s", limits_.max_seconds));
  }
}

void Interpreter::check_size(size_t bytes, const char* what) const {
  if (bytes > limits_.max_output_bytes) {
    fault(fmt::format("{}: result larger than {} bytes", what,
                      limits_.max_output_bytes));
  }
}

void Interpreter::count_iteration(const char* what) {
  if (++iterations_ > limits_.max_iterations) {
    fault(fmt::format("{}: more than {} loop iterations and calls in all", what,
                      limits_.max_iterations));
  }
  check_time();
}

void Interpreter::release_cycles() {
  for (const std::weak_ptr<Frame>& w : captured_) {
    if (std::shared_ptr<Frame> f = w.lock()) {
      f->vars.clear();
      f->parent.reset();
    }
  }
  captured_.clear();
  for (const Value& ns : namespaces_) ns.mutable_dict().items.clear();
  namespaces_.clear();
  hole_ = Value();
}

std::string Interpreter::render(const Program& program, const Dict& variables) {
  struct Release {
    ~Release() { in.release_cycles(); }
    Interpreter& in;
  } release{*this};
  auto globals = std::make_shared<Frame>();
  Dict g;
  add_globals(g, *this);
  for (auto& [k, v] : g.items) globals->vars[k.str()] = v;
  root_ = std::make_shared<Frame>();
  root_->parent = globals;
  for (const auto& [k, v] : variables.items) {
    if (!k.is_string()) fault("template variables must have string names");
    root_->vars[k.str()] = v;
  }
  frame_ = root_;
  std::string out;
  out_ = &out;
  if (exec(program.body) != Flow::normal) {
    fault("{% break %} or {% continue %} outside a loop");
  }
  out_ = nullptr;
  frame_.reset();
  root_.reset();
  return out;
}

void Interpreter::emit(const std::string& s) {
  if (out_->size() + s.size() > limits_.max_output_bytes) {
    fault(fmt::format("output longer than {} bytes", limits_.max_output_bytes));
  }
  *out_ += s;
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

void Interpreter::assign_targets(const std::vector<std::string>& targets,
                                 const Value& v, int line) {
  if (targets.size() == 1) {
    assign(targets[0], v);
    return;
  }
  const List items = iterate(v);
  if (items.size() != targets.size()) {
    throw TemplateError(
        fmt::format("template line {}: cannot unpack {} values into {} names",
                    line, items.size(), targets.size()));
  }
  for (size_t i = 0; i < items.size(); ++i) assign(targets[i], items[i]);
}

Interpreter::Flow Interpreter::exec(const Body& body) {
  for (const NodePtr& n : body) {
    const Flow f = exec_node(*n);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

std::string Interpreter::render_body(const Body& body,
                                     std::shared_ptr<Frame> frame) {
  std::string buf;
  std::string* saved_out = out_;
  std::shared_ptr<Frame> saved_frame = frame_;
  out_ = &buf;
  if (frame) frame_ = std::move(frame);
  try {
    exec(body);
  } catch (...) {
    out_ = saved_out;
    frame_ = saved_frame;
    throw;
  }
  out_ = saved_out;
  frame_ = saved_frame;
  return buf;
}

Interpreter::Flow Interpreter::exec_node(const Node& n) {
  Depth d(*this);
  try {
    switch (n.kind) {
      case Node::Kind::text:
        emit(n.text);
        return Flow::normal;
      case Node::Kind::output:
        emit(eval(*n.expr).to_str());
        return Flow::normal;
      case Node::Kind::if_:
        for (const auto& [cond, body] : n.branches) {
          if (!cond || eval(*cond).truthy()) return exec(body);
        }
        return Flow::normal;
      case Node::Kind::for_:
        exec_for(n);
        return Flow::normal;
      case Node::Kind::set: {
        Value v = eval(*n.expr);
        if (n.attr.empty()) {
          assign_targets(n.targets, v, n.line);
          return Flow::normal;
        }
        const Value ns = lookup(n.targets[0]);
        if (!ns.is_dict() || !ns.dict().is_namespace) {
          fault(fmt::format(
              "cannot assign attribute '{}' of '{}': not a namespace()", n.attr,
              n.targets[0]));
        }
        ns.mutable_dict().set(n.attr, std::move(v));
        return Flow::normal;
      }
      case Node::Kind::set_block: {
        Value v(render_body(n.body, nullptr));
        if (n.expr) {
          hole_ = v;
          v = eval(*n.expr);
        }
        assign(n.targets[0], v);
        return Flow::normal;
      }
      case Node::Kind::macro:
        assign(n.name, make_macro(n, frame_));
        return Flow::normal;
      case Node::Kind::call_block: {
        Value caller = make_macro(n, frame_);
        emit(eval_call(*n.expr, &caller).to_str());
        return Flow::normal;
      }
      case Node::Kind::filter_block:
        hole_ = Value(render_body(n.body, nullptr));
        emit(eval(*n.expr).to_str());
        return Flow::normal;
      case Node::Kind::break_:
        return Flow::break_;
      case Node::Kind::continue_:
        return Flow::continue_;
      case Node::Kind::scope:
        return exec(n.body);
    }
  } catch (const TemplateException& e) {
    if (located(e)) throw;
    throw TemplateException(
        fmt::format("template line {}: {}", n.line, e.what()));
  } catch (const TemplateError& e) {
    if (located(e)) throw;
    throw TemplateError(fmt::format("template line {}: {}", n.line, e.what()));
  }
  return Flow::normal;
}

void Interpreter::exec_for(const Node& n) {
  List items = iterate(eval(*n.expr));
  if (n.cond) {
    // `for x in xs if cond`: the condition sees the loop variables, and
    // loop.length counts what passes.
    List kept;
    auto saved = frame_;
    for (const Value& item : items) {
      count_iteration("for loop");
      frame_ = std::make_shared<Frame>();
      frame_->parent = saved;
      try {
        assign_targets(n.targets, item, n.line);
        if (eval(*n.cond).truthy()) kept.push_back(item);
      } catch (...) {
        frame_ = saved;
        throw;
      }
    }
    frame_ = saved;
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(n.else_body);
    return;
  }
  const int64_t len = static_cast<int64_t>(items.size());
  auto saved = frame_;
  const Value outer_loop = lookup("loop");
  try {
    for (int64_t i = 0; i < len; ++i) {
      count_iteration("for loop");
      frame_ = std::make_shared<Frame>();
      frame_->parent = saved;
      Dict loop;
      loop.set("index0", Value(i));
      loop.set("index", Value(i + 1));
      loop.set("revindex", Value(len - i));
      loop.set("revindex0", Value(len - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == len - 1));
      loop.set("length", Value(len));
      loop.set("previtem", i > 0
                               ? items[i - 1]
                               : Value::undefined("there is no previous item"));
      loop.set("nextitem", i + 1 < len
                               ? items[i + 1]
                               : Value::undefined("there is no next item"));
      const int64_t depth0 =
          outer_loop.is_dict() &&
                  outer_loop.dict().find(std::string_view("depth0"))
              ? outer_loop.dict().find(std::string_view("depth0"))->as_int() + 1
              : 0;
      loop.set("depth0", Value(depth0));
      loop.set("depth", Value(depth0 + 1));
      loop.set(
          "cycle", Value::function("loop.cycle", [i](Args& a) {
            if (a.positional.empty()) fault("loop.cycle: no items");
            return a.positional[static_cast<size_t>(i) % a.positional.size()];
          }));
      assign("loop", Value(std::move(loop)));
      assign_targets(n.targets, items[i], n.line);
      if (exec(n.body) == Flow::break_) break;
    }
  } catch (...) {
    frame_ = saved;
    throw;
  }
  frame_ = saved;
}

Value Interpreter::make_macro(const Node& n, std::shared_ptr<Frame> scope) {
  const Node* node = &n;
  if (captured_.empty() || captured_.back().lock() != scope) {
    captured_.push_back(scope);
  }
  return Value::function(
      n.kind == Node::Kind::macro ? n.name : "caller",
      [this, node, scope](Args& a) -> Value {
        count_iteration("macro call");
        Depth d(*this);
        auto frame = std::make_shared<Frame>();
        frame->parent = scope;
        const auto& params = node->params;
        List varargs;
        for (size_t i = 0; i < a.positional.size(); ++i) {
          if (i < params.size()) {
            frame->vars[params[i].first] = a.positional[i];
          } else {
            varargs.push_back(a.positional[i]);
          }
        }
        Dict kwargs;
        for (auto& [k, v] : a.keyword) {
          bool is_param = false;
          for (const auto& p : params) is_param |= p.first == k;
          if (is_param) {
            frame->vars[k] = v;
          } else if (k != "caller") {
            kwargs.set(k, v);
          } else {
            frame->vars["caller"] = v;
          }
        }
        frame->vars["varargs"] = Value(std::move(varargs));
        frame->vars["kwargs"] = Value(std::move(kwargs));
        // Defaults are evaluated at call time, in the macro's frame.
        auto saved = frame_;
        frame_ = frame;
        try {
          for (const auto& [name, def] : params) {
            if (frame->vars.count(name)) continue;
            frame->vars[name] =
                def ? eval(*def)
                    : Value::undefined(fmt::format(
                          "parameter '{}' of macro '{}' was not given", name,
                          node->name));
          }
        } catch (...) {
          frame_ = saved;
          throw;
        }
        frame_ = saved;
        return Value(render_body(node->body, frame));
      });
}

Value Interpreter::eval(const Expr& e) {
  Depth d(*this);
  try {
    return eval_inner(e);
  } catch (const TemplateException& x) {
    if (located(x)) throw;
    throw TemplateException(
        fmt::format("template line {}: {}", e.line, x.what()));
  } catch (const TemplateError& x) {
    if (located(x)) throw;
    throw TemplateError(fmt::format("template line {}: {}", e.line, x.what()));
  }
}

Args Interpreter::eval_args(const Expr& e, size_t first) {
  Args a;
  for (size_t i = first; i < e.args.size(); ++i) {
    a.positional.push_back(eval(*e.args[i]));
  }
  for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
  return a;
}

Value Interpreter::eval_call(const Expr& e, const Value* caller) {
  const Value fn = eval(*e.args[0]);
  Args a = eval_args(e, 1);
  if (caller) a.keyword.emplace_back("caller", *caller);
  if (fn.is_undefined()) fail_undefined(fn);
  if (!fn.is_function()) {
    fault(fmt::format("'{}' object is not callable", fn.type_name()));
  }
  return fn.call(a);
}

Value Interpreter::eval_inner(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::literal:
      return e.value;
    case Expr::Kind::name:
      return lookup(e.name);
    case Expr::Kind::list: {
      List l;
      for (const ExprPtr& x : e.args) l.push_back(eval(*x));
      return e.is_tuple ? Value::tuple(std::move(l)) : Value(std::move(l));
    }
    case Expr::Kind::dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        const Value k = eval(*e.args[i]);
        if (!k.is_string() && !k.is_number() && !k.is_none()) {
          fault(fmt::format("unhashable type: '{}'", k.type_name()));
        }
        d.set(k, eval(*e.args[i + 1]));
      }
      return Value(std::move(d));
    }
    case Expr::Kind::getattr:
      return get_attr(eval(*e.args[0]), e.name);
    case Expr::Kind::getitem:
      return get_item(eval(*e.args[0]), eval(*e.args[1]));
    case Expr::Kind::slice: {
      const Value obj = eval(*e.args[0]);
      Value parts[3];
      for (int k = 0; k < 3; ++k) {
        parts[k] = e.args[k + 1] ? eval(*e.args[k + 1]) : Value::none();
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::call:
      return eval_call(e, nullptr);
    case Expr::Kind::filter: {
      const Value target = e.args[0] ? eval(*e.args[0]) : hole_;
      Args a = eval_args(e, 1);
      return filter(e.name, target, a);
    }
    case Expr::Kind::test: {
      const Value target = eval(*e.args[0]);
      Args a = eval_args(e, 1);
      return Value(test(e.name, target, a) != e.negated);
    }
    case Expr::Kind::unary: {
      const Value v = eval(*e.args[0]);
      if (e.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) {
        fault(fmt::format("bad operand type for unary {}: '{}'", e.name,
                          v.type_name()));
      }
      if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
      if (v.is_float()) return Value(-v.as_double());
      if (v.as_int() == INT64_MIN) fault("integer overflow");
      return Value(-v.as_int());
    }
    case Expr::Kind::binary:
      return eval_binary(e);
    case Expr::Kind::compare:
      return eval_compare(e);
    case Expr::Kind::cond:
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      return e.args[2] ? eval(*e.args[2])
                       : Value::undefined("the if expression has no else");
  }
  return {};
}

Value Interpreter::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and") {
    Value a = eval(*e.args[0]);
    return a.truthy() ? eval(*e.args[1]) : a;
  }
  if (op == "or") {
    Value a = eval(*e.args[0]);
    return a.truthy() ? a : eval(*e.args[1]);
  }
  const Value a = eval(*e.args[0]);
  const Value b = eval(*e.args[1]);
  if (op == "~") {
    std::string s = a.to_str();
    const std::string t = b.to_str();
    check_size(s.size() + t.size(), "~");
    return Value(s + t);
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  auto unsupported = [&]() {
    fault(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                      a.type_name(), b.type_name()));
  };
  if (a.is_number() && b.is_number()) {
    const bool fl = a.is_float() || b.is_float();
    const double x = a.as_double(), y = b.as_double();
    const int64_t i = a.as_int_or_zero(), j = b.as_int_or_zero();
    int64_t r = 0;
    if (op == "+") {
      if (fl) return Value(x + y);
      if (__builtin_add_overflow(i, j, &r)) fault("integer overflow");
      return Value(r);
    }
    if (op == "-") {
      if (fl) return Value(x - y);
      if (__builtin_sub_overflow(i, j, &r)) fault("integer overflow");
      return Value(r);
    }
    if (op == "*") {
      if (fl) return Value(x * y);
      if (__builtin_mul_overflow(i, j, &r)) fault("integer overflow");
      return Value(r);
    }
    if (op == "/") {
      if (y == 0.0) fault("division by zero");
      return Value(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0.0) fault("integer division or modulo by zero");
      if (fl) {
        const double q = std::floor(x / y);
        return op == "//" ? Value(q) : Value(x - q * y);
      }
      const int64_t q = floor_div(i, j);
      return op == "//" ? Value(q) : Value(i - q * j);
    }
    if (op == "**") {
      if (!fl && j >= 0) {
        int64_t acc = 1;
        for (int64_t k = 0; k < j; ++k) {
          if (__builtin_mul_overflow(acc, i, &acc)) fault("integer overflow");
          if (acc == 0 || acc == 1) break;
        }
        return Value(acc);
      }
      return Value(std::pow(x, y));
    }
    unsupported();
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    if (a.is_markup() || b.is_markup()) {
      const std::string x = a.is_markup() ? a.str() : html_escape(a.str());
      const std::string y = b.is_markup() ? b.str() : html_escape(b.str());
      check_size(x.size() + y.size(), "+");
      return Value::markup(x + y);
    }
    check_size(a.str().size() + b.str().size(), "+");
    return Value(a.str() + b.str());
  }
  if (op == "+" && a.is_list() && b.is_list() && !a.is_generator() &&
      !b.is_generator()) {
    check_size(a.list().size() + b.list().size(), "+");
    List l = a.list();
    l.insert(l.end(), b.list().begin(), b.list().end());
    return Value(std::move(l));
  }
  if (op == "*" && (a.is_string() || a.is_list()) &&
      (b.is_int() || b.is_bool())) {
    const int64_t n = std::max<int64_t>(0, b.as_int());
    const size_t unit = a.is_string() ? a.str().size() : a.list().size();
    if (n > 0 && unit > 0)
      check_size(unit * std::min<int64_t>(n, INT32_MAX), "*");
    if (a.is_string()) {
      std::string s;
      for (int64_t k = 0; k < n; ++k) s += a.str();
      return Value(std::move(s));
    }
    List l;
    for (int64_t k = 0; k < n; ++k)
      l.insert(l.end(), a.list().begin(), a.list().end());
    return Value(std::move(l));
  }
  if (op == "%" && a.is_string()) {
    fault("printf-style '%' formatting of strings is not supported");
  }
  unsupported();
  return {};
}

namespace {

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::undefined:
      return false;
    case Value::Kind::string:
      if (!item.is_string()) {
        fault(
            fmt::format("'in <string>' requires string as left operand, not {}",
                        item.type_name()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::list:
      if (container.is_generator()) {
        // Consumes up to the match, as Python's `in` does.
        List rest = container.consume();
        for (size_t i = 0; i < rest.size(); ++i) {
          if (equal(rest[i], item)) {
            container.restore(List(rest.begin() + i + 1, rest.end()));
            return true;
          }
        }
        return false;
      }
      for (const Value& x : container.list()) {
        if (equal(x, item)) return true;
      }
      return false;
    case Value::Kind::dict:
      return container.dict().find_key(item) != nullptr;
    default:
      fault(fmt::format("argument of type '{}' is not iterable",
                        container.type_name()));
  }
}

}  // namespace

Value Interpreter::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (size_t k = 0; k < e.ops.size(); ++k) {
    Value right = eval(*e.args[k + 1]);
    const std::string& op = e.ops[k];
    bool r = false;
    if (op == "==") {
      r = equal(left, right);
    } else if (op == "!=") {
      r = !equal(left, right);
    } else if (op == "in") {
      r = contains(right, left);
    } else if (op == "notin") {
      r = !contains(right, left);
    } else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      if (op == "<") r = less(left, right);
      if (op == ">") r = less(right, left);
      if (op == "<=") r = !less(right, left);
      if (op == ">=") r = !less(left, right);
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  Value m = method(*this, obj, name);
  if (!m.is_undefined() || !m.undefined_name().empty()) return m;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
  }
  return Value::undefined(
      fmt::format("'{}' has no attribute '{}'",
                  obj.is_dict() ? std::string("dict object")
                                : fmt::format("{} object", obj.type_name()),
                  name));
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find_key(key)) return *v;
  }
  if (obj.is_generator()) fault("'generator' object is not subscriptable");
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    const bool is_list = obj.is_list();
    std::vector<std::string> chars;
    if (!is_list) chars = characters(obj.str());
    const int64_t n = is_list ? static_cast<int64_t>(obj.list().size())
                              : static_cast<int64_t>(chars.size());
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      return is_list ? obj.list()[static_cast<size_t>(i)]
                     : Value(chars[static_cast<size_t>(i)]);
    }
    return Value::undefined(fmt::format("index {} out of range", key.as_int()));
  }
  if (key.is_string()) {
    Value m = method(*this, obj, key.str());
    if (!m.is_undefined() || !m.undefined_name().empty()) return m;
  }
  return Value::undefined(
      fmt::format("'{}' object has no item {}", obj.type_name(), key.repr()));
}

Value Interpreter::slice(const Value& obj, const Value& start,
                         const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if ((!obj.is_list() && !obj.is_string()) || obj.is_generator()) {
    fault(fmt::format("'{}' object is not subscriptable", obj.type_name()));
  }
  auto as_index = [](const Value& v,
                     const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) {
      fault(fmt::format("slice {} must be an integer or none", what));
    }
    return v.as_int();
  };
  const List items = iterate(obj);
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t st = as_index(step, "step").value_or(1);
  if (st == 0) fault("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(as_index(start, "start"), st < 0 ? n - 1 : 0);
  const int64_t e = adjust(as_index(stop, "stop"), st < 0 ? -1 : n);
  List out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    out.push_back(items[static_cast<size_t>(i)]);
  }
  if (obj.is_list()) return Value(std::move(out));
  std::string s;
  for (const Value& c : out) s += c.str();
  return Value(std::move(s));
}

Value Interpreter::filter(const std::string& name, const Value& target,
                          Args& args) {
  return apply_filter(*this, name, target, args);
}

bool Interpreter::test(const std::string& name, const Value& target,
                       Args& args) {
  return apply_test(*this, name, target, args);
}

}  // namespace nascent::jinja
