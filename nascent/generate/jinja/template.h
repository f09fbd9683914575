// A Jinja template, the subset chat templates use, rendered with Jinja2's
// semantics in Hugging Face's environment (trim_blocks, lstrip_blocks,
// loop controls, {% generation %}, tojson with indent/separators/sort_keys,
// raise_exception, strftime_now; no autoescape, immutable lists and dicts).
//
//   jinja::Template t("{% for m in messages %}{{ m.content }}{% endfor %}");
//   jinja::Dict vars;
//   vars.set("messages", jinja::parse_json(R"([{"content": "hi"}])", "x"));
//   std::string text = t.render(vars);  // "hi"
//
// Parsing raises TemplateError naming the line and construct; rendering
// raises TemplateError too (TemplateException when the template calls
// raise_exception), and stops at the Limits: a hostile template fails,
// it does not crash or hang.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "nascent/generate/jinja/interpreter.h"
#include "nascent/generate/jinja/value.h"

namespace nascent::jinja {

class Template {
 public:
  explicit Template(std::string_view source, const Limits& limits = {});

  // now: what strftime_now() formats (default: the current time).
  std::string render(const Dict& variables,
                     std::time_t now = std::time(nullptr)) const;

 private:
  std::shared_ptr<const Program> program_;
  Limits limits_;
};

}  // namespace nascent::jinja
