// Chat-template filters, tests, functions and methods (see jinja_builtins.hpp).
#include "jinja_builtins.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "jinja_ops.hpp"
#include "utf8.hpp"

namespace trellis::tokenizer::jinja {
namespace {

using K = Value::Kind;

constexpr std::array kFilters{"trim",   "length",     "count",   "tojson", "upper",      "lower",      "default",
                              "d",      "join",       "first",   "last",   "string",     "int",        "float",
                              "items",  "list",       "reverse", "replace", "capitalize", "title",     "safe",
                              "select", "reject",     "selectattr", "rejectattr"};
constexpr std::array kTests{"defined", "undefined", "none",     "string",   "number", "integer", "float",
                            "boolean", "true",      "false",    "mapping",  "sequence", "iterable", "equalto",
                            "eq",      "ne",        "odd",      "even"};
constexpr std::array kFunctions{"raise_exception", "namespace", "range"};

template <std::size_t N>
bool listed(const std::array<const char*, N>& names, const std::string& name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

// The i-th positional argument, else the keyword `key`, else `fallback`.
Value arg(const CallArgs& a, std::size_t i, const char* key, Value fallback = Value()) {
  if (i < a.positional.size()) return a.positional[i];
  for (const auto& [k, v] : a.keyword)
    if (k == key) return v;
  return fallback;
}

void max_args(const CallArgs& a, std::size_t n, const std::string& what) {
  if (a.positional.size() + a.keyword.size() > n)
    throw TemplateError(what + " takes at most " + std::to_string(n) + " argument(s)");
}

const std::string& need_string(const Value& v, const std::string& what) {
  if (!v.is_string()) throw TemplateError(what + " needs a string, not " + v.type_name());
  return v.as_string();
}

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip/lstrip/rstrip: whitespace, or the characters of `chars`.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  const auto cs = characters(s);
  const auto set = chars.is_string() ? characters(chars.as_string()) : std::vector<std::string>{};
  auto strippable = [&](const std::string& c) {
    if (chars.is_string()) return std::find(set.begin(), set.end(), c) != set.end();
    std::size_t i = 0;
    return utf8::sequence_length(c, 0) > 0 && is_py_space(utf8::next(c, i));
  };
  std::size_t b = 0, e = cs.size();
  if (left)
    while (b < e && strippable(cs[b])) ++b;
  if (right)
    while (e > b && strippable(cs[e - 1])) --e;
  std::string out;
  for (std::size_t i = b; i < e; ++i) out += cs[i];
  return out;
}

// Python's str.split(sep=None, maxsplit=-1).
List split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (sep.is_string()) {
    const std::string& d = sep.as_string();
    if (d.empty()) throw TemplateError("split: empty separator");
    std::size_t at = 0;
    for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const std::size_t hit = s.find(d, at);
      if (hit == std::string::npos) break;
      out.emplace_back(s.substr(at, hit - at));
      at = hit + d.size();
    }
    out.emplace_back(s.substr(at));
    return out;
  }
  const auto cs = characters(s);
  auto space = [&](std::size_t i) {
    std::size_t k = 0;
    return utf8::sequence_length(cs[i], 0) > 0 && is_py_space(utf8::next(cs[i], k));
  };
  std::size_t i = 0;
  while (true) {
    while (i < cs.size() && space(i)) ++i;
    if (i == cs.size()) break;
    std::string word;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      for (; i < cs.size(); ++i) word += cs[i];
      std::string w = strip(word, Value(), false, true);
      out.emplace_back(std::move(w));
      break;
    }
    for (; i < cs.size() && !space(i); ++i) word += cs[i];
    out.emplace_back(std::move(word));
  }
  return out;
}

std::string ascii_case(std::string s, int (*f)(int)) {
  for (char& c : s) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = ascii_case(s, [](int c) { return std::tolower(c); });
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool start = true;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
    start = !std::isalpha(u);
  }
  return out;
}

std::string replace(const std::string& s, const Value& from, const Value& to, const Value& count) {
  const std::string& a = need_string(from, "replace");
  const std::string& b = need_string(to, "replace");
  if (a.empty()) throw TemplateError("replace: empty search string is not supported");
  int64_t left = count.kind() == K::Int ? count.as_int() : -1;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; left != 0 && (hit = s.find(a, at)) != std::string::npos; --left) {
    out += s.substr(at, hit - at) + b;
    at = hit + a.size();
  }
  return out + s.substr(at);
}

bool starts_or_ends(const std::string& s, const Value& affix, bool start, const std::string& what) {
  const std::vector<Value> options = affix.kind() == K::List ? affix.as_list() : std::vector<Value>{affix};
  for (const Value& o : options) {
    const std::string& a = need_string(o, what);
    if (start ? s.starts_with(a) : s.ends_with(a)) return true;
  }
  return false;
}

List items_of(const Value& v) {
  if (!v.is_mapping()) throw TemplateError(std::string("items needs a dict, not ") + v.type_name());
  List out;
  for (const auto& [k, x] : v.as_dict().items) out.emplace_back(List{Value(k), x});
  return out;
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case K::Undefined: return 0;
    case K::String: return static_cast<int64_t>(characters(v.as_string()).size());
    case K::List: return static_cast<int64_t>(v.as_list().size());
    case K::Dict:
    case K::Namespace: return static_cast<int64_t>(v.as_dict().items.size());
    default: throw TemplateError(std::string("length: a value of type ") + v.type_name() + " has no length");
  }
}

}  // namespace

bool is_filter(const std::string& name) { return listed(kFilters, name); }
bool is_test(const std::string& name) { return listed(kTests, name); }
bool is_function(const std::string& name) { return listed(kFunctions, name); }

Value apply_filter(const std::string& name, const Value& v, const CallArgs& a) {
  const std::string what = "filter '" + name + "'";
  if (name == "trim") return strip(v.str(), arg(a, 0, "chars"), true, true);
  if (name == "length" || name == "count") return length(v);
  if (name == "tojson") {
    max_args(a, 1, what);
    const Value indent = arg(a, 0, "indent", Value::none());
    if (indent.kind() != K::None && indent.kind() != K::Int) throw TemplateError("tojson: indent must be an integer");
    return v.to_json(indent.kind() == K::Int ? static_cast<int>(indent.as_int()) : -1);
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    // select(test, args...) / selectattr(attr, test, args...); no test: truthiness
    const bool by_attr = name.ends_with("attr");
    const bool keep_if = name.starts_with("select");
    if (a.positional.size() < (by_attr ? 1u : 0u) || !a.keyword.empty())
      throw TemplateError(what + " takes positional arguments only");
    const std::size_t t = by_attr ? 1 : 0;
    CallArgs test_args;
    if (a.positional.size() > t + 1) test_args.positional.assign(a.positional.begin() + t + 1, a.positional.end());
    const std::string test = a.positional.size() > t ? need_string(a.positional[t], what) : "";
    if (!test.empty() && !is_test(test)) throw TemplateError(what + ": test '" + test + "' is not supported");
    List out;
    for (const Value& x : iterate(v)) {
      const Value subject = by_attr ? subscript(x, a.positional[0]) : x;
      const bool pass = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
      if (pass == keep_if) out.push_back(x);
    }
    return out;
  }
  if (name == "upper") return ascii_case(v.str(), [](int c) { return std::toupper(c); });
  if (name == "lower") return ascii_case(v.str(), [](int c) { return std::tolower(c); });
  if (name == "capitalize") return capitalize(v.str());
  if (name == "title") return title(v.str());
  if (name == "safe" || name == "string") return v.str();
  if (name == "default" || name == "d") {
    const bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
    return (v.is_undefined() || (boolean && !v.truthy())) ? arg(a, 0, "default_value", Value("")) : v;
  }
  if (name == "join") {
    const std::string sep = arg(a, 0, "d", Value("")).str();
    std::string out;
    bool first = true;
    for (const Value& x : iterate(v)) {
      out += (first ? "" : sep) + x.str();
      first = false;
    }
    return out;
  }
  if (name == "first" || name == "last") {
    const auto xs = iterate(v);
    if (xs.empty()) return Value();
    return name == "first" ? xs.front() : xs.back();
  }
  if (name == "list") return List(iterate(v));
  if (name == "reverse") {
    if (v.is_string()) return slice(v, std::nullopt, std::nullopt, -1);
    auto xs = iterate(v);
    std::reverse(xs.begin(), xs.end());
    return List(std::move(xs));
  }
  if (name == "items") return items_of(v);
  if (name == "replace") return replace(v.str(), arg(a, 0, "old"), arg(a, 1, "new"), arg(a, 2, "count"));
  if (name == "int") {
    if (v.is_number() || v.kind() == K::Bool) return static_cast<int64_t>(v.as_number());
    try {
      return static_cast<int64_t>(std::stoll(v.str()));
    } catch (const std::exception&) {
      return arg(a, 0, "default", Value(0));
    }
  }
  if (name == "float") {
    if (v.is_number() || v.kind() == K::Bool) return v.as_number();
    try {
      return std::stod(v.str());
    } catch (const std::exception&) {
      return arg(a, 0, "default", Value(0.0));
    }
  }
  throw TemplateError("unknown " + what);
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.kind() == K::None;
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::Int;
  if (name == "float") return v.kind() == K::Float;
  if (name == "boolean") return v.kind() == K::Bool;
  if (name == "true") return v.kind() == K::Bool && v.as_bool();
  if (name == "false") return v.kind() == K::Bool && !v.as_bool();
  if (name == "mapping") return v.kind() == K::Dict;
  if (name == "sequence") return v.kind() == K::List || v.is_string() || v.kind() == K::Dict;
  if (name == "iterable") return v.kind() == K::List || v.is_string() || v.kind() == K::Dict;
  if (name == "equalto" || name == "eq") return v == arg(a, 0, "other");
  if (name == "ne") return !(v == arg(a, 0, "other"));
  if (name == "odd" || name == "even") {
    if (v.kind() != K::Int) throw TemplateError("test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  throw TemplateError("unknown test '" + name + "'");
}

Value call_function(const std::string& name, const CallArgs& a) {
  if (name == "raise_exception") throw TemplateError("raise_exception: " + arg(a, 0, "message").str());
  if (name == "namespace") {
    Dict d;
    if (!a.positional.empty()) {
      if (!a.positional[0].is_mapping()) throw TemplateError("namespace() takes a dict or keyword arguments");
      d = a.positional[0].as_dict();
    }
    for (const auto& [k, v] : a.keyword) d.set(k, v);
    return Value::make_namespace(std::move(d));
  }
  if (name == "range") {
    for (const Value& x : a.positional)
      if (x.kind() != K::Int) throw TemplateError("range() needs integers");
    const auto& p = a.positional;
    if (p.empty() || p.size() > 3) throw TemplateError("range() takes 1 to 3 arguments");
    const int64_t start = p.size() > 1 ? p[0].as_int() : 0, stop = p.size() > 1 ? p[1].as_int() : p[0].as_int();
    const int64_t step = p.size() > 2 ? p[2].as_int() : 1;
    if (step == 0) throw TemplateError("range() step cannot be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
    return out;
  }
  throw TemplateError("unknown function '" + name + "'");
}

Value call_method(const Value& obj, const std::string& m, const CallArgs& a) {
  const std::string what = std::string(obj.type_name()) + "." + m + "()";
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (m == "startswith" || m == "endswith") {
      max_args(a, 1, what);
      return starts_or_ends(s, arg(a, 0, "prefix"), m == "startswith", what);
    }
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
      max_args(a, 1, what);
      return strip(s, arg(a, 0, "chars"), m != "rstrip", m != "lstrip");
    }
    if (m == "split") {
      const Value n = arg(a, 1, "maxsplit", Value(-1));
      return split(s, arg(a, 0, "sep"), n.kind() == K::Int ? n.as_int() : -1);
    }
    if (m == "upper") return ascii_case(s, [](int c) { return std::toupper(c); });
    if (m == "lower") return ascii_case(s, [](int c) { return std::tolower(c); });
    if (m == "title") return title(s);
    if (m == "capitalize") return capitalize(s);
    if (m == "replace") return replace(s, arg(a, 0, "old"), arg(a, 1, "new"), arg(a, 2, "count"));
  } else if (obj.kind() == K::Dict) {
    if (m == "get") {
      const Value* v = obj.as_dict().find(arg(a, 0, "key").str());
      return v ? *v : arg(a, 1, "default", Value::none());
    }
    if (m == "items") return items_of(obj);
    if (m == "keys") return List(iterate(obj));
    if (m == "values") {
      List out;
      for (const auto& [k, v] : obj.as_dict().items) out.push_back(v);
      return out;
    }
  } else if (obj.is_undefined()) {
    throw TemplateError("cannot call " + m + "() on an undefined value");
  }
  throw TemplateError("method " + what + " is not supported");
}

}  // namespace trellis::tokenizer::jinja
