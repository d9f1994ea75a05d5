// ChatTemplate: parse once, render many (see chat_template.hpp).
#include "trellis/tokenizer/chat_template.hpp"

#include "jinja_ast.hpp"
#include "jinja_parser.hpp"
#include "trellis/error.hpp"

namespace trellis::tokenizer {

namespace {

constexpr std::string_view kChatML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

struct ChatTemplate::Program {
  jinja::Body body;
};

ChatOptions ChatOptions::for_tokenizer(const Tokenizer& tokenizer) {
  ChatOptions o;
  o.bos_token = tokenizer.bos_token();
  o.eos_token = tokenizer.eos_token();
  return o;
}

ChatTemplate::ChatTemplate(std::string_view source) {
  auto p = std::make_shared<Program>();
  try {
    p->body = jinja::parse_template(source);
  } catch (const jinja::TemplateError& e) {
    throw Error(std::string("chat template: ") + e.what());
  }
  program_ = std::move(p);
}

ChatTemplate ChatTemplate::for_tokenizer(const Tokenizer& tokenizer) {
  return tokenizer.chat_template() ? ChatTemplate(*tokenizer.chat_template()) : chatml();
}

ChatTemplate ChatTemplate::chatml() { return ChatTemplate(kChatML); }

std::string_view ChatTemplate::chatml_source() { return kChatML; }

std::string ChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  auto& list = vars["messages"] = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  vars["add_generation_prompt"] = options.add_generation_prompt;
  if (options.bos_token) vars["bos_token"] = *options.bos_token;
  if (options.eos_token) vars["eos_token"] = *options.eos_token;
  for (const auto& [k, v] : options.extra.items()) vars[k] = v;
  return render(vars);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw Error("chat template: variables must be a JSON object");
  jinja::Context ctx;
  ctx.scopes.emplace_back();
  try {
    for (const auto& [k, v] : variables.items()) ctx.assign(k, jinja::Value::from_json(v));
    ctx.scopes.emplace_back();  // the template's own top-level variables
    jinja::exec_body(program_->body, ctx);
  } catch (const jinja::TemplateError& e) {
    throw Error("chat template line " + std::to_string(ctx.line) + ": " + e.what());
  }
  return std::move(ctx.out);
}

}  // namespace trellis::tokenizer
