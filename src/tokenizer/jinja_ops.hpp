// Operators of the chat-template interpreter, with Python's semantics:
// arithmetic and concatenation, comparisons, `in`, subscripts, slices and
// iteration. Type errors throw TemplateError naming the operator and types.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "jinja_value.hpp"

namespace trellis::tokenizer::jinja {

// + - * / // % ** ~ == != < <= > >=
Value binary(const std::string& op, const Value& a, const Value& b);
// Python's `item in container` (substring, element, or key).
bool contains(const Value& container, const Value& item);
// x[i]: list/string index (negative counts from the end), dict key;
// undefined when absent, as in Jinja.
Value subscript(const Value& x, const Value& index);
// x[start:stop:step] on lists and strings (by code point).
Value slice(const Value& x, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step);
// The items a `for` visits: list elements, dict keys, string characters;
// undefined iterates as empty.
std::vector<Value> iterate(const Value& x);
// The code points of a string, each as its own UTF-8 string.
std::vector<std::string> characters(const std::string& s);

}  // namespace trellis::tokenizer::jinja
