// The parsed form of a template: expressions and statements, each with the
// template line it came from (for error messages).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nascent/generate/jinja/value.h"

namespace nascent::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,  // value
    name,     // name
    list,     // args
    dict,     // args: key, value, key, value...
    getattr,  // args[0].name
    getitem,  // args[0][args[1]]
    slice,    // args[0][args[1]:args[2]:args[3]] (null parts omitted)
    call,     // args[0](args[1:], kwargs)
    filter,   // args[0] | name(args[1:], kwargs); args[0] null in a block
    test,     // args[0] is [not] name(args[1:])
    unary,    // name: "not", "-", "+"
    binary,   // name: + - * / // % ** ~ and or
    compare,  // args[0] (ops[i] args[i+1])...
    cond,     // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;   // Tests: "is not".
  bool is_tuple = false;  // A list literal written as a tuple.
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // compare: == != < <= > >= in notin
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    text,          // text
    output,        // {{ expr }}
    if_,           // branches
    for_,          // targets in expr [if cond] body [else else_body]
    set,           // targets (or targets[0].attr) = expr
    set_block,     // {% set targets[0] [| filter] %}body{% endset %}
    macro,         // name(params) body
    call_block,    // {% call(params) expr %}body{% endcall %}
    filter_block,  // {% filter expr %}body{% endfilter %}
    break_,
    continue_,
    scope,  // A body rendered in place ({% generation %}).
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;  // for ... if cond
  std::vector<std::string> targets;
  std::string attr;                                // set ns.attr
  std::vector<std::pair<ExprPtr, Body>> branches;  // if/elif (null: else)
  Body body, else_body;
  std::string name;                                     // macro
  std::vector<std::pair<std::string, ExprPtr>> params;  // null: no default
};

struct Program {
  Body body;
};

}  // namespace nascent::jinja
