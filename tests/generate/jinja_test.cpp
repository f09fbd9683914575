// The Jinja interpreter: each construct against Jinja2's own rendering
// (jinja_cases.inc, made by scripts/gen_jinja_cases.py), then its errors
// and limits: bad templates name the line and construct, hostile ones stop
// at a limit instead of crashing or hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "nascent/generate/jinja/template.h"

namespace nascent::generate {
namespace {

using jinja::Limits;
using jinja::Template;
using jinja::TemplateError;
using jinja::TemplateException;

struct JinjaCase {
  const char* name;
  const char* source;
  const char* expected;
};

#include "generate/jinja_cases.inc"

jinja::Dict context() {
  return jinja::parse_json(kJinjaContext, "ctx").dict();
}

TEST(Jinja, MatchesJinja2) {
  const jinja::Dict ctx = context();
  for (const JinjaCase& c : kJinjaCases) {
    try {
      EXPECT_EQ(Template(c.source).render(ctx), c.expected) << c.name;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": " << e.what();
    }
  }
}

// The error message of rendering `source` (with the test context).
std::string error_of(const std::string& source, const Limits& limits = {}) {
  try {
    Template(source, limits).render(context());
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const std::string& source, const std::string& part,
                  const Limits& limits = {}) {
  const std::string e = error_of(source, limits);
  EXPECT_NE(e.find(part), std::string::npos)
      << "template: " << source.substr(0, 200) << "\nerror: " << e;
}

TEST(Jinja, SyntaxErrorsNameTheLineAndConstruct) {
  expect_error("a\n{% include 'x.j' %}",
               "template line 2: unsupported tag 'include'");
  expect_error("{% extends 'base' %}", "unsupported tag 'extends'");
  expect_error("{% if x %}\nno end", "missing {% endif %}");
  expect_error("{% for x in xs %}", "missing {% endfor %}");
  expect_error("{% macro m() %}", "missing {% endmacro %}");
  expect_error("\n\n{{ 1 + }}", "template line 3: unexpected '}}'");
  expect_error("{{ 'open", "string literal is not closed");
  expect_error("{{ 'open\\", "string literal is not closed");  // Ends in \.
  expect_error("{# open", "comment {# is not closed");
  expect_error("{{ x", "'{{' is not closed");
  expect_error("{% for in xs %}{% endfor %}", "expected 'in' in a for loop");
  expect_error("{% endfor %}", "unsupported tag 'endfor'");
  expect_error("{{ x $ y }}", "unexpected character '$'");
  expect_error("{{ f(*xs) }}", "*args");
  expect_error("{% for x in xs recursive %}{% endfor %}", "recursive");
}

TEST(Jinja, RuntimeErrorsNameTheLine) {
  expect_error("ok\n{{ xs | nope }}",
               "template line 2: no filter named 'nope'");
  expect_error("{% if 1 is nope %}{% endif %}", "no test named 'nope'");
  expect_error("{{ missing.attr }}", "'missing' is undefined");
  expect_error("{{ missing + 1 }}", "'missing' is undefined");
  expect_error("{{ 1 / 0 }}", "division by zero");
  expect_error("{{ 1 // 0 }}", "by zero");
  expect_error("{{ 'a' + 1 }}",
               "unsupported operand type(s) for +: 'str' and 'int'");
  expect_error("{{ 'a' < 1 }}", "'<' not supported");
  expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow");
  expect_error("{{ xs.append(4) }}", "unsafe");
  expect_error("{{ d.pop('a') }}", "unsafe");
  expect_error("{{ s.__class__() }}", "unsafe");
  expect_error("{% for x in 5 %}{% endfor %}", "'int' object is not iterable");
  expect_error("{% set a, b = [1] %}", "cannot unpack 1 values into 2 names");
  expect_error("{% set s.x = 1 %}", "not a namespace()");
  expect_error("{{ xs | map('upper') | tojson }}", "generator is not JSON");
  expect_error("{{ (xs | select('odd')) | length }}", "has no len()");
  expect_error("{{ (range(0) | first).x }}", "No first item");
  // Indexes too large for an integer.
  expect_error("{{ xs.99999999999999999999 }}", "out of range");
  expect_error("{{ msgs | map(attribute='99999999999999999999') | list }}",
               "attribute: index 99999999999999999999 is out of range");
  expect_error("{{ '{99999999999999999999}'.format(1) }}", "out of range");
  try {
    Template("a\n{{ raise_exception('bad role: ' ~ 'x') }}").render({});
    ADD_FAILURE();
  } catch (const TemplateException& e) {
    EXPECT_EQ(std::string(e.what()),
              "template line 2: raise_exception: bad role: x");
  }
}

TEST(Jinja, HostileTemplatesStopAtTheLimits) {
  Limits small;
  small.max_iterations = 10000;
  small.max_output_bytes = 100000;
  small.max_depth = 100;
  expect_error("{% for i in range(100000) %}{% endfor %}", "range: 100000",
               small);
  expect_error(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}"
      "{% endfor %}",
      "more than 10000 loop iterations", small);
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
               "nesting deeper than 100 levels", small);
  expect_error("{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}",
               "nesting deeper", small);
  expect_error("{{ 'x' * 1000000000000 }}", "result larger than", small);
  expect_error(
      "{% for i in range(5000) %}{{ 'abcdefghijklmnopqrstuvwxyz' }}"
      "{% endfor %}",
      "output longer than 100000 bytes", small);
  expect_error(
      "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns | tojson }}",
      "nested deeper than");
  expect_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}",
               "nested deeper than");
  expect_error(
      "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
      "nesting deeper than");
  std::string deep_ifs;
  for (int i = 0; i < 5000; ++i) deep_ifs += "{% if true %}";
  expect_error(deep_ifs, "nesting deeper than");
  // Many steps over large strings: stopped by the clock.
  Limits quick;
  quick.max_seconds = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(
      "{% set s = 'x' * 1000000 %}{% for i in range(100000) %}"
      "{% set t = s.upper() %}{% endfor %}",
      "rendering took longer than 0.2 s", quick);
  // Loop-free statements are checked too.
  std::string flat = "{% set s = 'x' * 1000000 %}";
  for (int i = 0; i < 20000; ++i) flat += "{% set t = s.upper() %}";
  expect_error(flat, "longer than 0.2 s", quick);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            5.0);
  Limits tiny;
  tiny.max_template_bytes = 10;
  EXPECT_THROW(Template("{{ 'more than ten bytes' }}", tiny), TemplateError);
  // The default limits leave real work alone.
  EXPECT_EQ(Template("{% for i in range(1000) %}{% endfor %}done").render({}),
            "done");
}

TEST(Jinja, BadJsonIsAValueError) {
  EXPECT_THROW(jinja::parse_json("[1, 2", "messages"), ValueError);
  EXPECT_THROW(jinja::parse_json(
                   std::string(1000, '[') + std::string(1000, ']'), "messages"),
               ValueError);
  const jinja::Value v =
      jinja::parse_json(R"({"b": 1, "a": [true, null, 1.5]})", "x");
  ASSERT_TRUE(v.is_dict());
  EXPECT_EQ(v.dict().items[0].first.str(), "b");  // Order kept.
  EXPECT_EQ(jinja::to_json(v, {}), R"({"b": 1, "a": [true, null, 1.5]})");
}

TEST(Jinja, FloatReprIsPythons) {
  EXPECT_EQ(jinja::float_repr(1.0), "1.0");
  EXPECT_EQ(jinja::float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(jinja::float_repr(1e16), "1e+16");
  EXPECT_EQ(jinja::float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(jinja::float_repr(0.0001), "0.0001");
  EXPECT_EQ(jinja::float_repr(0.00001), "1e-05");
  EXPECT_EQ(jinja::float_repr(-2.5e-300), "-2.5e-300");
}

}  // namespace
}  // namespace nascent::generate
