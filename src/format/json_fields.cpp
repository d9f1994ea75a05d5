// Typed JSON field reads with messages that name the file, object and field.
#include "json_fields.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "trellis/error.hpp"

namespace trellis::format::detail {

std::string excerpt(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const json* find_field(const json& obj, std::string_view key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> read_int(const json& obj, std::string_view key, std::string_view where) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      throw Error(fmt::format("{}: field '{}' = {} is too large", where, key, excerpt(*v)));
    return v->get<int64_t>();
  }
  throw Error(fmt::format("{}: field '{}' must be an integer, got {}", where, key, excerpt(*v)));
}

std::optional<double> read_number(const json& obj, std::string_view key, std::string_view where) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number())
    throw Error(fmt::format("{}: field '{}' must be a number, got {}", where, key, excerpt(*v)));
  const double d = v->get<double>();
  if (!std::isfinite(d))
    throw Error(fmt::format("{}: field '{}' must be finite, got {}", where, key, excerpt(*v)));
  return d;
}

std::optional<bool> read_bool(const json& obj, std::string_view key, std::string_view where) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean())
    throw Error(fmt::format("{}: field '{}' must be true or false, got {}", where, key, excerpt(*v)));
  return v->get<bool>();
}

std::optional<std::string> read_string(const json& obj, std::string_view key, std::string_view where) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string())
    throw Error(fmt::format("{}: field '{}' must be a string, got {}", where, key, excerpt(*v)));
  return v->get<std::string>();
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: read failed", path.string()));
  return std::move(ss).str();
}

json parse_json(std::string_view text, std::string_view where) {
  // Deeper documents are rejected while parsing, so nothing recursive that
  // runs on them later (comparison, dump) can exhaust the stack.
  constexpr int kMaxDepth = 64;
  const auto limit_depth = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) throw Error(fmt::format("{}: JSON nested deeper than {} levels", where, kMaxDepth));
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), limit_depth);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
}

}  // namespace trellis::format::detail
