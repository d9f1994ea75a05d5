// Internal: typed reads of JSON object fields. Every failure throws
// trellis::Error naming `where` (file and object path) and the field, and
// saying what the field must be. Absent or null fields read as std::nullopt.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trellis::format::detail {

using nlohmann::json;

// A short, always-printable rendering of a JSON value for messages.
std::string excerpt(const json& value);

// The field, or nullptr when absent or null. `obj` must be an object.
const json* find_field(const json& obj, std::string_view key);

std::optional<int64_t> read_int(const json& obj, std::string_view key, std::string_view where);
std::optional<double> read_number(const json& obj, std::string_view key, std::string_view where);
std::optional<bool> read_bool(const json& obj, std::string_view key, std::string_view where);
std::optional<std::string> read_string(const json& obj, std::string_view key, std::string_view where);

// The whole file as text; a missing or unreadable file is a trellis::Error.
std::string read_text_file(const std::filesystem::path& path);

// Parses `text` as JSON; a syntax error, or nesting deeper than 64 levels,
// is a trellis::Error naming `where`.
json parse_json(std::string_view text, std::string_view where);

}  // namespace trellis::format::detail
