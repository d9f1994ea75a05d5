// Parses a chat template (the Jinja subset of jinja_ast.hpp and
// jinja_builtins.hpp) into a statement list. Statements: if/elif/else,
// for (with `a, b` targets, an `if` filter and `else`), set (a name or a
// namespace attribute), break, continue. Anything else — macro, call, block,
// extends, include, import, raw, filter blocks, set blocks, unknown filters,
// tests or functions — throws TemplateError naming the construct and line.
#pragma once
#include <string_view>

#include "jinja_ast.hpp"

namespace trellis::tokenizer::jinja {

Body parse_template(std::string_view source);

}  // namespace trellis::tokenizer::jinja
