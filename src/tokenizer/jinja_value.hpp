// Values of the chat-template interpreter (a Jinja subset): undefined, none,
// booleans, integers, floats, strings, lists, dicts (insertion-ordered,
// string keys) and namespaces (the one mutable kind: `set ns.x = ...`).
// Lists and dicts are shared immutable data, as in Hugging Face's sandboxed
// Jinja environment. str()/repr()/tojson follow Python, so templates print
// what Python's Jinja would print.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace trellis::tokenizer::jinja {

// An error while rendering; the interpreter adds the template line.
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Value;
using List = std::vector<Value>;

struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };

  Value() = default;  // undefined
  static Value none();
  Value(bool b) : kind_(Kind::Bool), data_(b) {}
  Value(int64_t i) : kind_(Kind::Int), data_(i) {}
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double d) : kind_(Kind::Float), data_(d) {}
  Value(std::string s) : kind_(Kind::String), data_(std::move(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(List l) : kind_(Kind::List), data_(std::make_shared<const List>(std::move(l))) {}
  Value(Dict d) : kind_(Kind::Dict), data_(std::make_shared<Dict>(std::move(d))) {}
  static Value make_namespace(Dict d);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_number() const;  // int or float (bools count as ints, as in Python)
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  Dict& namespace_dict() const { return *std::get<std::shared_ptr<Dict>>(data_); }

  bool truthy() const;
  std::string str() const;   // Python str(); undefined prints as ""
  std::string repr() const;  // Python repr()
  // Python json.dumps(v, ensure_ascii=False, indent=indent): ", " and ": "
  // separators on one line when indent < 0, else one item per line.
  std::string to_json(int indent = -1, int depth = 0) const;
  const char* type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const List>, std::shared_ptr<Dict>>
      data_;
};

bool operator==(const Value& a, const Value& b);

}  // namespace trellis::tokenizer::jinja
