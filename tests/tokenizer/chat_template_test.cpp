// Chat templates: ChatML, the fixture's own template, Qwen3 and Llama-3
// templates (tests/data/tokenizer/*.jinja, written from their published
// structure) on plain conversations, Jinja semantics and whitespace control
// as Hugging Face renders them, and clear errors for what is unsupported.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "trellis/error.hpp"
#include "trellis/tokenizer/chat_template.hpp"

namespace trellis::tokenizer {
namespace {

using nlohmann::ordered_json;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string render(std::string_view source, const ordered_json& vars = ordered_json::object()) {
  return ChatTemplate(source).render(vars);
}

// The message of the Error that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::vector<ChatMessage> kSystemUser = {{"system", "You are helpful."}, {"user", "Hi"}};
const std::vector<ChatMessage> kMultiTurn = {
    {"system", "You are helpful."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "How are you?"}};

TEST(ChatTemplate, ChatMLTwoMessagesWithGenerationPrompt) {
  EXPECT_EQ(ChatTemplate::chatml().render(kSystemUser),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(ChatTemplate::chatml().render(kSystemUser, no_prompt),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, FixtureTemplateIsChatML) {
  const Tokenizer tok = Tokenizer::from_dir(TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m");
  const ChatTemplate t = ChatTemplate::for_tokenizer(tok);
  const std::string text = t.render(kSystemUser, ChatOptions::for_tokenizer(tok));
  EXPECT_EQ(text, ChatTemplate::chatml().render(kSystemUser));
  const auto ids = tok.encode(text);
  EXPECT_EQ(ids.front(), 1);  // <|im_start|>
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 2);  // two <|im_end|>
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(ChatTemplate, Qwen3PlainConversations) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/qwen3.jinja"));
  EXPECT_EQ(t.render(kSystemUser),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.render(kMultiTurn),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  const std::vector<ChatMessage> user_only = {{"user", "Hi"}};
  EXPECT_EQ(t.render(user_only), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");

  ChatOptions no_think;
  no_think.extra["enable_thinking"] = false;
  EXPECT_EQ(t.render(user_only, no_think),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  ChatOptions think;
  think.extra["enable_thinking"] = true;
  EXPECT_EQ(t.render(user_only, think), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Qwen3ThinkingInHistory) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/qwen3.jinja"));
  // Reasoning of earlier turns is dropped; the turn after the last user
  // query keeps a think block.
  const std::vector<ChatMessage> history = {{"user", "2+2?"},
                                            {"assistant", "<think>\nadd them\n</think>\n\n4"},
                                            {"user", "3+3?"},
                                            {"assistant", "6"}};
  ChatOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(t.render(history, o),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n6<|im_end|>\n");
}

TEST(ChatTemplate, Qwen3Tools) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/qwen3.jinja"));
  const ordered_json vars = {
      {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
      {"tools",
       {{{"type", "function"},
         {"function", {{"name", "get_weather"}, {"parameters", {{"city", "string"}, {"days", 3}, {"é", nullptr}}}}}}}},
      {"add_generation_prompt", true}};
  const std::string text = t.render(vars);
  EXPECT_NE(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
                      "{\"city\": \"string\", \"days\": 3, \"é\": null}}}\n</tools>"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.starts_with("<|im_start|>system\n# Tools\n\n"));
  EXPECT_TRUE(text.ends_with("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"));
}

TEST(ChatTemplate, Llama3PlainConversations) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/llama3.jinja"));
  ChatOptions o;
  o.bos_token = "<|begin_of_text|>";
  o.eos_token = "<|eot_id|>";
  EXPECT_EQ(t.render(kSystemUser, o),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  const std::vector<ChatMessage> padded = {{"user", "  Hi there \n"}, {"assistant", "Hello."}};
  o.add_generation_prompt = false;
  EXPECT_EQ(t.render(padded, o),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>");
}

TEST(ChatTemplate, Llama31PlainConversations) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/llama3.1.jinja"));
  ChatOptions o;
  o.bos_token = "<|begin_of_text|>";
  EXPECT_EQ(t.render(kMultiTurn, o),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  const std::vector<ChatMessage> user_only = {{"user", "Hi"}};
  o.extra["date_string"] = "01 Jan 2025";
  EXPECT_EQ(t.render(user_only, o),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Llama31ToolsAndBuiltins) {
  const ChatTemplate t(read(TRELLIS_TEST_DATA "/tokenizer/llama3.1.jinja"));
  const ordered_json vars = {
      {"bos_token", "<|begin_of_text|>"},
      {"builtin_tools", {"code_interpreter", "brave_search", "wolfram_alpha"}},
      {"tools", {{{"name", "f"}, {"parameters", ordered_json::object()}}}},
      {"messages", {{{"role", "user"}, {"content", " Q "}}}},
      {"add_generation_prompt", false}};
  const std::string text = t.render(vars);
  EXPECT_NE(text.find("Environment: ipython\nTools: brave_search, wolfram_alpha\n\n"), std::string::npos) << text;
  EXPECT_NE(text.find("{\n    \"name\": \"f\",\n    \"parameters\": {}\n}\n\nQ<|eot_id|>"), std::string::npos)
      << text;
  const ordered_json no_user = {{"tools", ordered_json::array()},
                                {"messages", {{{"role", "system"}, {"content", "s"}}}}};
  EXPECT_NE(error_of([&] { t.render(no_user); }).find("Cannot put tools in the first user message"), std::string::npos);
}

TEST(ChatTemplate, WhitespaceControlLikeHuggingFace) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the
  // indentation before it goes.
  EXPECT_EQ(render("{% if true %}\n  yes\n{% endif %}\nafter"), "  yes\nafter");
  EXPECT_EQ(render("<ul>\n  {% for x in [1, 2] %}\n  <li>{{ x }}</li>\n  {% endfor %}\n</ul>"),
            "<ul>\n  <li>1</li>\n  <li>2</li>\n</ul>");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a\n  {{- 'x' -}}\n  b"), "axb");
  EXPECT_EQ(render("a {{ 'x' }}\nb"), "a x\nb");  // no trimming around {{ }}
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("x {% if true %}y{% endif %}"), "x y");  // not at a line start
  EXPECT_EQ(render("{# comment #}\nA{#- c -#}  B"), "AB");
}

TEST(ChatTemplate, Expressions) {
  EXPECT_EQ(render("{{ 'a' + 'b' | upper }}"), "aB");  // filters bind tighter than +
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ 7 / 2 }} {{ -7 % 3 }} {{ 2 ** 10 }}"), "7 3 3.5 2 1024");
  EXPECT_EQ(render("{{ 'n=' ~ 3 ~ none ~ true }}"), "n=3NoneTrue");
  EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ 'hello'[1:3] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1] }}"),
            "[3, 2, 1] el 3 é");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}"),
            "True True True True");
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is not string }}"),
            "False True True True True");
  EXPECT_EQ(render("{{ not 1 == 2 }} {{ 1 < 2 and 'a' or 'b' }} {{ 0 or 'z' }}"), "True a z");
  EXPECT_EQ(render("{{ 'yes' if 1 > 0 else 'no' }}{{ 'never' if false }}"), "yes");
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na'.lstrip('\\n') }}|{{ 'a  '.rstrip() }}"),
            "a b|a|a|a");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'aXa'.replace('a', 'b') }}"),
            "True True bXb");
  EXPECT_EQ(render("{{ [1, 2] | length }} {{ 'héllo' | length }} {{ ' t ' | trim }} {{ [1, 2] | join('-') }}"),
            "2 5 t 1-2");
  EXPECT_EQ(render("{{ x | default('d') }} {{ '' | default('d', true) }} {{ [3, 4] | first }} {{ [3, 4] | last }}"),
            "d d 3 4");
  EXPECT_EQ(render("{{ {'a': [1, 2.5, none, true], 'b': 'q\"\\n'} | tojson }}"),
            "{\"a\": [1, 2.5, null, true], \"b\": \"q\\\"\\n\"}");
  EXPECT_EQ(render("{{ {'a': 1, 'b': 'x'} }} {{ ['it\\'s'] }}"), "{'a': 1, 'b': 'x'} [\"it's\"]");
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ [1, 2, 3, 4] | select('odd') | list }} {{ [0, 1, 2] | reject | list }} {{ ['a', 'b'] | reject('eq', 'a') | join }}"),
            "[1, 3] [0] b");
  const ordered_json ms = {{"ms", {{{"role", "system"}}, {{"role", "user"}, {"x", 1}}, {{"role", "user"}}}}};
  EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | list | length }} {{ ms | selectattr('x') | list }} "
                   "{{ ms | rejectattr('role', 'eq', 'user') | list }}",
                   ms),
            "2 [{'role': 'user', 'x': 1}] [{'role': 'system'}]");

  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z', 0) }} {{ d.a }} {{ d['a'] }} {{ d.zz }}", {{"d", {{"a", 1}}}}),
            "1 0 1 1 ");
}

TEST(ChatTemplate, Statements) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }};"
                   "{% endfor %}",
                   {{"xs", {"a", "b"}}}),
            "01TrueFalse2;12FalseTrue2;");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {{ loop.revindex0 }}|"
                   "{% endfor %}"),
            "<1>2 2|1<2>3 1|2<3> 0|");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}"),
            "6");
  // A plain set inside a loop does not leak out of it.
  EXPECT_EQ(render("{% set n = 0 %}{% for x in [1, 2] %}{% set n = x %}{% endfor %}{{ n }}"), "0");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.last }}{% endfor %}"), "2False4True");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(render("{% for k, v in d | items %}{{ k }}={{ v }} {% endfor %}{% for k in d %}{{ k }}{% endfor %}",
                   {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1 a=2 ba");
  EXPECT_EQ(render("{% if a %}1{% elif b %}2{% else %}3{% endif %}", {{"a", false}, {"b", true}}), "2");
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}"), "012");
}

TEST(ChatTemplate, UnsupportedConstructsFailClearly) {
  EXPECT_NE(error_of([] { ChatTemplate("a\n{% macro f() %}x{% endmacro %}"); }).find("line 2: '{% macro %}' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{{ x | wordcount }}"); }).find("filter 'wordcount' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{{ strftime_now('%Y') }}"); }).find("function 'strftime_now' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{% if x is odd_looking %}{% endif %}"); }).find("test 'odd_looking'"),
            std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{% if x %}open"); }).find("missing '{% endif %}'"), std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{{ x "); }).find("not closed"), std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{% set x %}block{% endset %}"); }).find("block {% set %}"), std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{% endfor %}"); }).find("unexpected '{% endfor %}'"), std::string::npos);
  EXPECT_NE(error_of([] { ChatTemplate("{% break %}"); }).find("outside a for loop"), std::string::npos);
  // Hostile nesting is refused instead of exhausting the stack.
  EXPECT_NE(error_of([] { ChatTemplate("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}"); })
                .find("nesting deeper than"),
            std::string::npos);
  std::string ifs;
  for (int i = 0; i < 500; ++i) ifs += "{% if 1 %}";
  EXPECT_NE(error_of([&] { ChatTemplate{ifs}; }).find("nesting deeper than"), std::string::npos);
  std::string chain = "{{ x";
  for (int i = 0; i < 5000; ++i) chain += ".a";
  EXPECT_NE(error_of([&] { ChatTemplate{chain + " }}"}; }).find("more than 1000 tokens"), std::string::npos);
}

TEST(ChatTemplate, RenderErrorsNameTheLine) {
  EXPECT_EQ(error_of([] { render("ok\n{{ raise_exception('Only user and assistant roles are supported!') }}"); }),
            "chat template line 2: raise_exception: Only user and assistant roles are supported!");
  EXPECT_NE(error_of([] { render("{{ 'a'.zfill(3) }}"); }).find("string.zfill() is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { render("{{ x.y }}"); }).find("undefined"), std::string::npos);
  EXPECT_NE(error_of([] { render("{{ 'a' + 1 }}"); }).find("unsupported operand types for +: string and integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { render("{% set x = 1 %}{% set x.y = 2 %}"); }).find("not a namespace()"),
            std::string::npos);
}

}  // namespace
}  // namespace trellis::tokenizer
