// Parses the tokens of a template into a Program. TemplateError names the
// line and the construct for anything outside the supported subset
// (extends/include/import, unknown tags) or malformed.
#pragma once

#include <vector>

#include "nascent/generate/jinja/ast.h"
#include "nascent/generate/jinja/lexer.h"

namespace nascent::jinja {

// max_depth bounds the nesting of blocks and expressions.
Program parse(const std::vector<Token>& tokens, int max_depth);

}  // namespace nascent::jinja
