// Lexing of chat templates, in two levels:
//  * split_template cuts the source into text, {{ expression }} and
//    {% statement %} chunks (comments dropped), applying whitespace control
//    exactly as Hugging Face's environment does: `-` strips all whitespace on
//    that side, trim_blocks drops the first newline after a block or comment
//    tag, lstrip_blocks drops spaces and tabs between a line start and a block
//    or comment tag (`+` turns that off for the tag).
//  * tokenize cuts the inside of a tag into names, literals and operators.
// Errors are TemplateError with the line.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trellis::tokenizer::jinja {

struct Chunk {
  enum class Kind { Text, Expression, Statement } kind;
  std::string text;  // the text, or the inside of the tag
  int line;          // 1-based line of the chunk's start
};

std::vector<Chunk> split_template(std::string_view source);

struct Token {
  enum class Kind { Name, String, Int, Float, Op, End } kind;
  std::string text;  // names and operators as written; strings unescaped
};

std::vector<Token> tokenize(std::string_view tag, int line);

}  // namespace trellis::tokenizer::jinja
