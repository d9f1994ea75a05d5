// Chat-template values (see jinja_value.hpp).
#include "jinja_value.hpp"

#include <charconv>
#include <cmath>

namespace trellis::tokenizer::jinja {
namespace {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string python_string_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += q;
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v(std::move(d));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, v] : j.items()) d.items.emplace_back(k, from_json(v));
      return Value(std::move(d));
    }
    default: throw TemplateError(std::string("cannot use a JSON ") + j.type_name() + " as a template value");
  }
}

double Value::as_number() const {
  if (kind_ == Kind::Float) return std::get<double>(data_);
  if (kind_ == Kind::Bool) return as_bool() ? 1 : 0;
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return std::get<double>(data_) != 0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !as_list().empty();
    case Kind::Dict: return !as_dict().items.empty();
    case Kind::Namespace: return true;
  }
  return false;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return as_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(as_int());
    case Kind::Float: return float_repr(std::get<double>(data_));
    case Kind::String: return python_string_repr(as_string());
    case Kind::List: {
      std::string s = "[";
      for (std::size_t i = 0; i < as_list().size(); ++i) s += (i ? ", " : "") + as_list()[i].repr();
      return s + "]";
    }
    case Kind::Dict:
    case Kind::Namespace: {
      std::string s = kind_ == Kind::Namespace ? "<Namespace {" : "{";
      for (std::size_t i = 0; i < as_dict().items.size(); ++i)
        s += (i ? ", " : "") + python_string_repr(as_dict().items[i].first) + ": " + as_dict().items[i].second.repr();
      return s + (kind_ == Kind::Namespace ? "}>" : "}");
    }
  }
  return "";
}

std::string Value::to_json(int indent, int depth) const {
  // Between items, and before the closing bracket, per Python's layout.
  auto line_break = [&](int level) {
    std::string b(indent < 0 ? "" : "\n");
    if (indent >= 0) b.append(static_cast<std::size_t>(level * indent), ' ');
    return b;
  };
  const std::string sep = (indent < 0 ? ", " : ",") + line_break(depth + 1);
  const std::string open = line_break(depth + 1), close = line_break(depth);
  switch (kind_) {
    case Kind::None: return "null";
    case Kind::Bool: return as_bool() ? "true" : "false";
    case Kind::Int: return std::to_string(as_int());
    case Kind::Float: {
      const double d = std::get<double>(data_);
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return float_repr(d);
    }
    case Kind::String: return json_string(as_string());
    case Kind::List: {
      if (as_list().empty()) return "[]";
      std::string s = "[" + open;
      for (std::size_t i = 0; i < as_list().size(); ++i) s += (i ? sep : "") + as_list()[i].to_json(indent, depth + 1);
      return s + close + "]";
    }
    case Kind::Dict: {
      if (as_dict().items.empty()) return "{}";
      std::string s = "{" + open;
      for (std::size_t i = 0; i < as_dict().items.size(); ++i)
        s += (i ? sep : "") + json_string(as_dict().items[i].first) + ": " +
             as_dict().items[i].second.to_json(indent, depth + 1);
      return s + close + "}";
    }
    case Kind::Undefined:
    case Kind::Namespace: break;
  }
  throw TemplateError(std::string("tojson: a value of type ") + type_name() + " is not JSON serializable");
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "none";
    case Kind::Bool: return "boolean";
    case Kind::Int: return "integer";
    case Kind::Float: return "float";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "namespace";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  const bool an = a.is_number() || a.kind() == K::Bool, bn = b.is_number() || b.kind() == K::Bool;
  if (an && bn) return a.as_number() == b.as_number();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.as_string() == b.as_string();
    case K::List: return a.as_list() == b.as_list();
    case K::Dict: {
      const auto& x = a.as_dict().items;
      const auto& y = b.as_dict().items;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* w = b.as_dict().find(k);
        if (w == nullptr || !(*w == v)) return false;
      }
      return true;
    }
    case K::Namespace: return &a.namespace_dict() == &b.namespace_dict();
    default: return false;
  }
}

}  // namespace trellis::tokenizer::jinja
