// trellis::tokenizer::ChatTemplate — renders a conversation into the prompt
// text a model was trained on, from the model's Jinja chat template
// (tokenizer_config.json's chat_template or chat_template.jinja).
//
// The interpreter covers the Jinja subset Hugging Face chat templates use
// (Qwen2/Qwen3, Llama-3 and ChatML among them): {% if/elif/else %},
// {% for %} with loop.index0/index/first/last/length/previtem/nextitem,
// {% set %} including namespace() attributes, break/continue, expressions
// with ~ + - * / // %
// comparisons and/or/not/in/is, slices, filters (trim, length, tojson,
// join, default, ...), string methods (startswith, endswith, strip, lstrip,
// rstrip, split, ...), raise_exception, and whitespace control as Hugging
// Face renders it (trim_blocks, lstrip_blocks, `-`). Anything else throws
// trellis::Error naming the construct and its line, when the template is
// constructed. Rendering errors (raise_exception, type errors) throw
// trellis::Error with the line too.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  std::optional<std::string> bos_token, eos_token;  // absent: undefined in the template
  // More template variables, e.g. {"enable_thinking": false} or "tools".
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();

  // bos_token/eos_token from the tokenizer's config.
  static ChatOptions for_tokenizer(const Tokenizer& tokenizer);
};

class ChatTemplate {
 public:
  explicit ChatTemplate(std::string_view source);
  // The tokenizer's template, or ChatML when the model has none.
  static ChatTemplate for_tokenizer(const Tokenizer& tokenizer);
  static ChatTemplate chatml();
  // The ChatML template (Hugging Face's former default).
  static std::string_view chatml_source();

  std::string render(std::span<const ChatMessage> messages, const ChatOptions& options = {}) const;
  // Renders with arbitrary variables (an object: messages, tools, ...), for
  // messages richer than role + content.
  std::string render(const nlohmann::ordered_json& variables) const;

 private:
  struct Program;
  std::shared_ptr<const Program> program_;
};

}  // namespace trellis::tokenizer
