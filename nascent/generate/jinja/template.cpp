#include "nascent/generate/jinja/template.h"

#include <fmt/format.h>

#include "nascent/generate/jinja/parser.h"

namespace nascent::jinja {

Template::Template(std::string_view source, const Limits& limits)
    : limits_(limits) {
  if (source.size() > limits.max_template_bytes) {
    throw TemplateError(
        fmt::format("template: {} bytes is over the limit of {}", source.size(),
                    limits.max_template_bytes));
  }
  program_ = std::make_shared<const Program>(
      parse(tokenize(source, LexOptions{}), limits.max_depth));
}

std::string Template::render(const Dict& variables, std::time_t now) const {
  Interpreter in(limits_, now);
  return in.render(*program_, variables);
}

}  // namespace nascent::jinja
