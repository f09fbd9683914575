#include "nascent/generate/jinja/parser.h"

#include <fmt/format.h>

namespace nascent::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int max_depth)
      : t_(tokens), max_depth_(max_depth) {}

  Program run() {
    Program p;
    std::string end;
    p.body = body({}, &end);
    return p;
  }

 private:
  // Nesting guard for recursive descent.
  struct Deeper {
    explicit Deeper(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.max_depth_) {
        p_.fail(fmt::format("nesting deeper than {} levels", p_.max_depth_));
      }
    }
    ~Deeper() { --p_.depth_; }
    Parser& p_;
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const {
    return t_[std::min(i_ + k, t_.size() - 1)];
  }
  bool at_op(const char* op) const {
    return cur().type == T::op && cur().text == op;
  }
  bool at_name(const char* n) const {
    return cur().type == T::name && cur().text == n;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError(fmt::format("template line {}: {}", cur().line, what));
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case T::end:
        return "end of template";
      case T::block_end:
        return "'%}'";
      case T::var_end:
        return "'}}'";
      case T::string:
        return "a string";
      default:
        return fmt::format("'{}'", t.text);
    }
  }
  void expect_op(const char* op) {
    if (!at_op(op)) {
      fail(fmt::format("expected '{}', found {}", op, describe(cur())));
    }
    ++i_;
  }
  std::string expect_name() {
    if (cur().type != T::name) {
      fail(fmt::format("expected a name, found {}", describe(cur())));
    }
    return t_[i_++].text;
  }
  void expect_block_end() {
    if (cur().type != T::block_end) {
      fail(fmt::format("expected '%}}', found {}", describe(cur())));
    }
    ++i_;
  }

  // Statements up to one of the `ends` tags (its name goes to *end, the
  // tag's block_begin and name consumed).
  Body body(const std::vector<std::string>& ends, std::string* end) {
    Deeper d(*this);
    Body out;
    while (true) {
      const Token& tok = cur();
      if (tok.type == T::end) {
        if (!ends.empty()) {
          fail(fmt::format("missing {{% {} %}}", ends.back()));
        }
        return out;
      }
      if (tok.type == T::text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::text;
        n->line = tok.line;
        n->text = tok.text;
        out.push_back(std::move(n));
        ++i_;
      } else if (tok.type == T::var_begin) {
        ++i_;
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::output;
        n->line = tok.line;
        n->expr = expression();
        if (cur().type != T::var_end) {
          fail(fmt::format("expected '}}}}', found {}", describe(cur())));
        }
        ++i_;
        out.push_back(std::move(n));
      } else if (tok.type == T::block_begin) {
        ++i_;
        if (cur().type != T::name) fail("expected a tag name after '{%'");
        const std::string tag = cur().text;
        for (const std::string& e : ends) {
          if (tag == e) {
            ++i_;
            *end = tag;
            return out;
          }
        }
        out.push_back(statement(tag));
      } else {
        fail(fmt::format("unexpected {}", describe(tok)));
      }
    }
  }

  NodePtr statement(const std::string& tag) {
    auto n = std::make_unique<Node>();
    n->line = cur().line;
    ++i_;  // The tag name.
    std::string end;
    if (tag == "if") {
      n->kind = Node::Kind::if_;
      ExprPtr cond = expression();
      expect_block_end();
      while (true) {
        Body b = body({"elif", "else", "endif"}, &end);
        n->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "endif") break;
        if (end == "elif") {
          cond = expression();
        } else {
          cond = nullptr;
          expect_block_end();
          n->branches.emplace_back(nullptr, body({"endif"}, &end));
          break;
        }
        expect_block_end();
      }
    } else if (tag == "for") {
      n->kind = Node::Kind::for_;
      n->targets = targets();
      if (!at_name("in")) fail("expected 'in' in a for loop");
      ++i_;
      n->expr = or_expr();  // "if" here filters, not a condition.
      if (at_name("if")) {
        ++i_;
        n->cond = expression();
      }
      if (at_name("recursive")) fail("recursive for loops are not supported");
      expect_block_end();
      n->body = body({"else", "endfor"}, &end);
      if (end == "else") {
        expect_block_end();
        n->else_body = body({"endfor"}, &end);
      }
    } else if (tag == "set") {
      n->targets = targets();
      if (at_op(".")) {
        ++i_;
        if (n->targets.size() != 1)
          fail("cannot assign an attribute of a tuple");
        n->attr = expect_name();
      }
      if (at_op("=")) {
        ++i_;
        n->kind = Node::Kind::set;
        n->expr = expression();
      } else {
        if (n->targets.size() != 1 || !n->attr.empty()) {
          fail("a block set assigns one name");
        }
        n->kind = Node::Kind::set_block;
        if (at_op("|")) n->expr = filters(nullptr);
        expect_block_end();
        n->body = body({"endset"}, &end);
        return finish(std::move(n));
      }
    } else if (tag == "macro") {
      n->kind = Node::Kind::macro;
      n->name = expect_name();
      params(n->params);
      expect_block_end();
      n->body = body({"endmacro"}, &end);
      if (cur().type == T::name && cur().text == n->name) ++i_;
    } else if (tag == "call") {
      n->kind = Node::Kind::call_block;
      if (at_op("(")) params(n->params);
      n->expr = expression();
      if (n->expr->kind != Expr::Kind::call) fail("{% call %} needs a call");
      expect_block_end();
      n->body = body({"endcall"}, &end);
    } else if (tag == "filter") {
      n->kind = Node::Kind::filter_block;
      n->expr = filter_chain_from_name();
      expect_block_end();
      n->body = body({"endfilter"}, &end);
    } else if (tag == "break" || tag == "continue") {
      n->kind = tag == "break" ? Node::Kind::break_ : Node::Kind::continue_;
    } else if (tag == "generation") {
      n->kind = Node::Kind::scope;
      expect_block_end();
      n->body = body({"endgeneration"}, &end);
    } else {
      i_--;
      fail(fmt::format("unsupported tag '{}'", tag));
    }
    return finish(std::move(n));
  }

  NodePtr finish(NodePtr n) {
    expect_block_end();
    return n;
  }

  // Loop and assignment targets: a, b or (a, b).
  std::vector<std::string> targets() {
    std::vector<std::string> out;
    const bool paren = at_op("(");
    if (paren) ++i_;
    out.push_back(expect_name());
    while (at_op(",")) {
      ++i_;
      out.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return out;
  }

  void params(std::vector<std::pair<std::string, ExprPtr>>& out) {
    expect_op("(");
    while (!at_op(")")) {
      std::string name = expect_name();
      ExprPtr def;
      if (at_op("=")) {
        ++i_;
        def = expression();
      }
      out.emplace_back(std::move(name), std::move(def));
      if (!at_op(",")) break;
      ++i_;
    }
    expect_op(")");
  }

  ExprPtr make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  ExprPtr expression() {
    Deeper d(*this);
    ExprPtr e = or_expr();
    while (at_name("if")) {
      auto c = make(Expr::Kind::cond, cur().line);
      ++i_;
      ExprPtr test = or_expr();
      ExprPtr other;
      if (at_name("else")) {
        ++i_;
        other = expression();
      }
      c->args.push_back(std::move(test));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, int line) {
    auto e = make(Expr::Kind::binary, line);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (at_name("or")) {
      const int line = cur().line;
      ++i_;
      e = binary("or", std::move(e), and_expr(), line);
    }
    return e;
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (at_name("and")) {
      const int line = cur().line;
      ++i_;
      e = binary("and", std::move(e), not_expr(), line);
    }
    return e;
  }

  ExprPtr not_expr() {
    if (at_name("not")) {
      Deeper d(*this);
      auto e = make(Expr::Kind::unary, cur().line);
      ++i_;
      e->name = "not";
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }

  ExprPtr compare() {
    ExprPtr first = math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == T::op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
           cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        ++i_;
      } else if (at_name("in")) {
        op = "in";
        ++i_;
      } else if (at_name("not") && peek().type == T::name &&
                 peek().text == "in") {
        op = "notin";
        i_ += 2;
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::compare, first->line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr math1() {
    ExprPtr e = concat();
    while (at_op("+") || at_op("-")) {
      const std::string op = cur().text;
      const int line = cur().line;
      ++i_;
      e = binary(op == "+" ? "+" : "-", std::move(e), concat(), line);
    }
    return e;
  }

  ExprPtr concat() {
    ExprPtr e = math2();
    while (at_op("~")) {
      const int line = cur().line;
      ++i_;
      e = binary("~", std::move(e), math2(), line);
    }
    return e;
  }

  ExprPtr math2() {
    ExprPtr e = pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      static const char* kOps[] = {"*", "/", "//", "%"};
      const char* op = kOps[0];
      for (const char* o : kOps) {
        if (cur().text == o) op = o;
      }
      const int line = cur().line;
      ++i_;
      e = binary(op, std::move(e), pow(), line);
    }
    return e;
  }

  ExprPtr pow() {
    ExprPtr e = unary(true);
    while (at_op("**")) {
      const int line = cur().line;
      ++i_;
      e = binary("**", std::move(e), unary(true), line);
    }
    return e;
  }

  ExprPtr unary(bool with_filter) {
    Deeper d(*this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      e = make(Expr::Kind::unary, cur().line);
      e->name = cur().text;
      ++i_;
      e->args.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    if (with_filter) e = filters(std::move(e));
    return e;
  }

  ExprPtr primary() {
    const Token& tok = cur();
    const int line = tok.line;
    if (tok.type == T::name) {
      ++i_;
      auto e = make(Expr::Kind::literal, line);
      if (tok.text == "true" || tok.text == "True") {
        e->value = Value(true);
      } else if (tok.text == "false" || tok.text == "False") {
        e->value = Value(false);
      } else if (tok.text == "none" || tok.text == "None") {
        e->value = Value::none();
      } else {
        e->kind = Expr::Kind::name;
        e->name = tok.text;
      }
      return e;
    }
    if (tok.type == T::string) {
      std::string s;
      while (cur().type == T::string) s += t_[i_++].text;  // 'a' 'b' joins.
      auto e = make(Expr::Kind::literal, line);
      e->value = Value(std::move(s));
      return e;
    }
    if (tok.type == T::integer || tok.type == T::floating) {
      ++i_;
      auto e = make(Expr::Kind::literal, line);
      try {
        e->value = tok.type == T::integer ? Value(int64_t{std::stoll(tok.text)})
                                          : Value(std::stod(tok.text));
      } catch (const std::exception&) {
        --i_;
        fail(fmt::format("number {} out of range", tok.text));
      }
      return e;
    }
    if (at_op("(")) {
      ++i_;
      if (at_op(")")) {  // The empty tuple.
        ++i_;
        auto t = make(Expr::Kind::list, line);
        t->is_tuple = true;
        return t;
      }
      ExprPtr e = expression();
      if (at_op(",")) {  // A tuple: a list here.
        auto l = make(Expr::Kind::list, line);
        l->is_tuple = true;
        l->args.push_back(std::move(e));
        while (at_op(",")) {
          ++i_;
          if (at_op(")")) break;
          l->args.push_back(expression());
        }
        e = std::move(l);
      }
      expect_op(")");
      return e;
    }
    if (at_op("[")) {
      ++i_;
      auto l = make(Expr::Kind::list, line);
      while (!at_op("]")) {
        l->args.push_back(expression());
        if (!at_op(",")) break;
        ++i_;
      }
      expect_op("]");
      return l;
    }
    if (at_op("{")) {
      ++i_;
      auto d = make(Expr::Kind::dict, line);
      while (!at_op("}")) {
        d->args.push_back(expression());
        expect_op(":");
        d->args.push_back(expression());
        if (!at_op(",")) break;
        ++i_;
      }
      expect_op("}");
      return d;
    }
    fail(fmt::format("unexpected {} in an expression", describe(tok)));
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (at_op(".")) {
        ++i_;
        auto g = make(Expr::Kind::getattr, line);
        if (cur().type == T::integer) {
          g->kind = Expr::Kind::getitem;
          auto idx = make(Expr::Kind::literal, line);
          try {
            idx->value = Value(int64_t{std::stoll(cur().text)});
          } catch (const std::exception&) {
            fail(fmt::format("index {} out of range", cur().text));
          }
          ++i_;
          g->args.push_back(std::move(e));
          g->args.push_back(std::move(idx));
        } else {
          g->name = expect_name();
          g->args.push_back(std::move(e));
        }
        e = std::move(g);
      } else if (at_op("[")) {
        ++i_;
        e = subscript(std::move(e), line);
      } else if (at_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    int n = 0;
    bool is_slice = false;
    while (true) {
      if (!at_op(":") && !at_op("]")) parts[n] = expression();
      if (at_op(":")) {
        is_slice = true;
        if (++n > 2) fail("a slice takes at most three parts");
        ++i_;
        continue;
      }
      break;
    }
    expect_op("]");
    auto s = make(is_slice ? Expr::Kind::slice : Expr::Kind::getitem, line);
    s->args.push_back(std::move(target));
    if (!is_slice && !parts[0]) fail("empty subscript");
    for (int k = 0; k < (is_slice ? 3 : 1); ++k) {
      s->args.push_back(std::move(parts[k]));
    }
    return s;
  }

  // Arguments after '(': positional then name=value.
  void call_args(Expr& e) {
    expect_op("(");
    while (!at_op(")")) {
      if (at_op("*") || at_op("**"))
        fail("*args and **kwargs are not supported");
      if (cur().type == T::name && peek().type == T::op && peek().text == "=") {
        std::string name = t_[i_].text;
        i_ += 2;
        e.kwargs.emplace_back(std::move(name), expression());
      } else {
        if (!e.kwargs.empty()) fail("positional argument after a keyword one");
        e.args.push_back(expression());
      }
      if (!at_op(",")) break;
      ++i_;
    }
    expect_op(")");
  }

  ExprPtr call(ExprPtr fn) {
    auto c = make(Expr::Kind::call, cur().line);
    c->args.push_back(std::move(fn));
    call_args(*c);
    return c;
  }

  // `| name(args)` and `is [not] name args`, in any sequence; target may be
  // null (filter blocks, set blocks).
  ExprPtr filters(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (at_op("|")) {
        ++i_;
        auto f = make(Expr::Kind::filter, line);
        f->name = expect_name();
        while (at_op(".")) {  // Dotted filter names are not Jinja's either.
          fail(fmt::format("unknown filter '{}.'", f->name));
        }
        f->args.push_back(std::move(e));
        if (at_op("(")) call_args(*f);
        e = std::move(f);
      } else if (at_name("is")) {
        ++i_;
        auto t = make(Expr::Kind::test, line);
        if (at_name("not")) {
          t->negated = true;
          ++i_;
        }
        t->name = expect_name();
        t->args.push_back(std::move(e));
        if (at_op("(")) {
          call_args(*t);
        } else if ((cur().type == T::name || cur().type == T::string ||
                    cur().type == T::integer || cur().type == T::floating ||
                    at_op("[") || at_op("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and") &&
                   !at_name("if") && !at_name("is") && !at_name("not") &&
                   !at_name("in")) {
          t->args.push_back(postfix(primary()));
        }
        e = std::move(t);
      } else if (at_op("(") && e) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // {% filter name(args) | other %}: a chain applied to the body.
  ExprPtr filter_chain_from_name() {
    const int line = cur().line;
    auto f = make(Expr::Kind::filter, line);
    f->name = expect_name();
    f->args.push_back(nullptr);
    if (at_op("(")) call_args(*f);
    return filters(std::move(f));
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

Program parse(const std::vector<Token>& tokens, int max_depth) {
  return Parser(tokens, max_depth).run();
}

}  // namespace nascent::jinja
