// Chat-template operators (see jinja_ops.hpp).
#include "jinja_ops.hpp"

#include <cmath>

#include "utf8.hpp"

namespace trellis::tokenizer::jinja {
namespace {

using K = Value::Kind;

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  throw TemplateError(std::string("unsupported operand types for ") + op + ": " + a.type_name() + " and " +
                      b.type_name());
}

bool both_ints(const Value& a, const Value& b) {
  auto is_int = [](const Value& v) { return v.kind() == K::Int || v.kind() == K::Bool; };
  return is_int(a) && is_int(b);
}

int64_t to_int(const Value& v) { return v.kind() == K::Bool ? (v.as_bool() ? 1 : 0) : v.as_int(); }

bool numeric(const Value& v) { return v.is_number() || v.kind() == K::Bool; }

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (!numeric(a) || !numeric(b)) type_error(op, a, b);
  if ((op == "/" || op == "//" || op == "%") && b.as_number() == 0) throw TemplateError("division by zero");
  if (both_ints(a, b)) {
    const int64_t x = to_int(a), y = to_int(b);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "//") return static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
    if (op == "%") return ((x % y) + y) % y;
    if (op == "**" && y >= 0) return static_cast<int64_t>(std::llround(std::pow(x, y)));
  }
  const double x = a.as_number(), y = b.as_number();
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if (op == "/") return x / y;
  if (op == "//") return std::floor(x / y);
  if (op == "%") return x - y * std::floor(x / y);
  return std::pow(x, y);  // "**"
}

int compare(const std::string& op, const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number() ? 1 : 0;
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  type_error(op, a, b);
}

// Python's slice.indices(len) then the visited indices.
std::vector<int64_t> slice_indices(int64_t len, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step) {
  const int64_t st = step.value_or(1);
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v < 0 ? *v + len : *v;
    if (st > 0) return std::clamp<int64_t>(i, 0, len);
    return std::clamp<int64_t>(i, -1, len - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : len - 1), e = clamp(stop, st > 0 ? len : -1);
  std::vector<int64_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
  return out;
}

}  // namespace

std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = std::max<std::size_t>(1, utf8::sequence_length(s, i));
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

Value binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return a.str() + b.str();
  if (op == "==") return a == b;
  if (op == "!=") return !(a == b);
  if (op == "<") return compare(op, a, b) < 0;
  if (op == "<=") return compare(op, a, b) <= 0;
  if (op == ">") return compare(op, a, b) > 0;
  if (op == ">=") return compare(op, a, b) >= 0;
  if (op == "+" && a.is_string() && b.is_string()) return a.as_string() + b.as_string();
  if (op == "+" && a.kind() == K::List && b.kind() == K::List) {
    List l = a.as_list();
    l.insert(l.end(), b.as_list().begin(), b.as_list().end());
    return l;
  }
  if (op == "*" && (a.is_string() || b.is_string())) {
    const Value& s = a.is_string() ? a : b;
    const Value& n = a.is_string() ? b : a;
    if (n.kind() != K::Int) type_error(op, a, b);
    std::string out;
    for (int64_t i = 0; i < n.as_int(); ++i) out += s.as_string();
    return out;
  }
  return arithmetic(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case K::String:
      if (!item.is_string()) type_error("in", item, container);
      return container.as_string().find(item.as_string()) != std::string::npos;
    case K::List:
      for (const Value& v : container.as_list())
        if (v == item) return true;
      return false;
    case K::Dict:
    case K::Namespace: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case K::Undefined: return false;
    default: type_error("in", item, container);
  }
}

Value subscript(const Value& x, const Value& index) {
  if (x.is_mapping()) {
    if (!index.is_string()) return Value();
    const Value* v = x.as_dict().find(index.as_string());
    return v ? *v : Value();
  }
  if (x.is_undefined()) throw TemplateError("cannot subscript an undefined value with " + index.repr());
  if (index.kind() != K::Int || (x.kind() != K::List && !x.is_string())) return Value();
  if (x.kind() == K::List) {
    const auto n = static_cast<int64_t>(x.as_list().size());
    const int64_t i = index.as_int() < 0 ? index.as_int() + n : index.as_int();
    return i >= 0 && i < n ? x.as_list()[i] : Value();
  }
  const auto chars = characters(x.as_string());
  const auto n = static_cast<int64_t>(chars.size());
  const int64_t i = index.as_int() < 0 ? index.as_int() + n : index.as_int();
  return i >= 0 && i < n ? Value(chars[i]) : Value();
}

Value slice(const Value& x, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
  if (x.kind() == K::List) {
    List out;
    for (int64_t i : slice_indices(static_cast<int64_t>(x.as_list().size()), start, stop, step))
      out.push_back(x.as_list()[i]);
    return out;
  }
  if (x.is_string()) {
    const auto chars = characters(x.as_string());
    std::string out;
    for (int64_t i : slice_indices(static_cast<int64_t>(chars.size()), start, stop, step)) out += chars[i];
    return out;
  }
  throw TemplateError(std::string("cannot slice a value of type ") + x.type_name());
}

std::vector<Value> iterate(const Value& x) {
  switch (x.kind()) {
    case K::Undefined: return {};
    case K::List: return x.as_list();
    case K::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, v] : x.as_dict().items) keys.emplace_back(k);
      return keys;
    }
    case K::String: {
      std::vector<Value> out;
      for (auto& c : characters(x.as_string())) out.emplace_back(std::move(c));
      return out;
    }
    default: throw TemplateError(std::string("a value of type ") + x.type_name() + " is not iterable");
  }
}

}  // namespace trellis::tokenizer::jinja
