// Trellis quantization entries: parameter rules and config.json parsing.
#include <limits>

#include <fmt/format.h>

#include "json_fields.hpp"
#include "quantization_parse.hpp"
#include "trellis/error.hpp"

namespace trellis::format {

void check_trellis_params(const TrellisParams& p, std::string_view where) {
  if (p.k < 1 || p.k > 8)
    throw Error(fmt::format("{}: bits k={} out of range (1 <= k <= 8)", where, p.k));
  if (p.L <= p.k || p.L > 16)
    throw Error(fmt::format("{}: trellis.L={} out of range (k < L <= 16, k={})", where, p.L, p.k));
  if (p.T <= 0 || p.T % 32 != 0)
    throw Error(fmt::format("{}: group_size T={} is not a positive multiple of 32", where, p.T));
  if (p.axis != 0 && p.axis != 1)
    throw Error(fmt::format("{}: trellis.axis={} must be 0 or 1", where, p.axis));
  if (p.rotation == Rotation::hadamard && (p.T & (p.T - 1)) != 0)
    throw Error(fmt::format("{}: rotation 'hadamard' needs group_size T={} to be a power of two", where,
                            p.T));
}

const TrellisParams* QuantizationConfig::find(std::string_view module) const {
  const auto it = modules.find(module);
  return it == modules.end() ? nullptr : &it->second;
}

namespace detail {
namespace {

std::optional<int> read_small_int(const json& obj, std::string_view key, std::string_view where) {
  const auto v = read_int(obj, key, where);
  if (!v) return std::nullopt;
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
    throw Error(fmt::format("{}: field '{}' = {} is out of range", where, key, *v));
  return int(*v);
}

void check_mode(const std::string& mode, std::string_view where) {
  if (mode != "trellis")
    throw Error(fmt::format("{}: unknown mode '{}' (only 'trellis' is supported)", where, mode));
}

void reject_unknown_fields(const json& obj, std::initializer_list<std::string_view> known,
                           std::string_view where) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (!ok) throw Error(fmt::format("{}: unknown field '{}'", where, key));
  }
}

TrellisParams parse_entry(const json& e, const QuantizationConfig& defaults,
                          const std::optional<std::string>& default_mode, std::string_view where) {
  reject_unknown_fields(e, {"mode", "bits", "group_size", "trellis", "rotation"}, where);
  const auto mode = read_string(e, "mode", where);
  if (!mode && !default_mode) throw Error(fmt::format("{}: no 'mode' (and no default)", where));
  check_mode(mode ? *mode : *default_mode, where);

  TrellisParams p;
  const auto bits = read_small_int(e, "bits", where);
  if (!bits && !defaults.default_bits) throw Error(fmt::format("{}: no 'bits' (and no default)", where));
  p.k = bits ? *bits : *defaults.default_bits;
  const auto group = read_small_int(e, "group_size", where);
  if (!group && !defaults.default_group_size)
    throw Error(fmt::format("{}: no 'group_size' (and no default)", where));
  p.T = group ? *group : *defaults.default_group_size;

  const json* t = find_field(e, "trellis");
  if (!t || !t->is_object()) throw Error(fmt::format("{}: 'trellis' must be an object {{L, code, axis}}", where));
  const std::string twhere = fmt::format("{}.trellis", where);
  reject_unknown_fields(*t, {"L", "code", "axis"}, twhere);
  const auto L = read_small_int(*t, "L", twhere);
  const auto code = read_string(*t, "code", twhere);
  const auto axis = read_small_int(*t, "axis", twhere);
  if (!L || !code || !axis) throw Error(fmt::format("{}: needs 'L', 'code' and 'axis'", twhere));
  if (*code != "1mad")
    throw Error(fmt::format("{}: unknown code '{}' (only '1mad' is supported)", twhere, *code));
  p.L = *L;
  p.axis = *axis;

  if (const auto rot = read_string(e, "rotation", where)) {
    if (*rot != "hadamard")
      throw Error(fmt::format("{}: unknown rotation '{}' (only 'hadamard' is supported)", where, *rot));
    p.rotation = Rotation::hadamard;
  }
  check_trellis_params(p, where);
  return p;
}

}  // namespace

QuantizationConfig parse_quantization(const json& obj, std::string_view where) {
  if (!obj.is_object()) throw Error(fmt::format("{}: must be an object, got {}", where, excerpt(obj)));
  QuantizationConfig q;
  q.default_bits = read_small_int(obj, "bits", where);
  q.default_group_size = read_small_int(obj, "group_size", where);
  const auto default_mode = read_string(obj, "mode", where);
  if (default_mode) check_mode(*default_mode, where);
  for (const auto& [key, value] : obj.items()) {
    if (key == "bits" || key == "group_size" || key == "mode") continue;
    const std::string ewhere = fmt::format("{} '{}'", where, key);
    if (!value.is_object())
      throw Error(fmt::format("{}: must be a module entry object (the only other keys are the defaults "
                              "bits, group_size, mode), got {}",
                              ewhere, excerpt(value)));
    q.modules.emplace(key, parse_entry(value, q, default_mode, ewhere));
  }
  return q;
}

}  // namespace detail
}  // namespace trellis::format
