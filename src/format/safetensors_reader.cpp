// safetensors parsing and validation (rules in safetensors.hpp).
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "json_fields.hpp"
#include "trellis/error.hpp"
#include "trellis/format/safetensors.hpp"

namespace trellis::format {
namespace {

using detail::excerpt;
using detail::json;

uint64_t read_le64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(p[i]);
  return v;
}

uint64_t read_offset(const json& v, std::string_view where) {
  if (!v.is_number_unsigned())
    throw Error(fmt::format("{}: data_offsets entries must be non-negative integers, got {}", where,
                            excerpt(v)));
  return v.get<uint64_t>();
}

std::map<std::string, std::string> read_metadata(const json& v, std::string_view source) {
  if (!v.is_object())
    throw Error(fmt::format("{}: __metadata__ must be an object of strings, got {}", source, excerpt(v)));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      throw Error(fmt::format("{}: __metadata__ '{}' must be a string, got {}", source, key,
                              excerpt(value)));
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// One header entry: dtype, shape and offsets checked against each other and
// against the data region; the data span is not set here.
TensorInfo read_entry(const std::string& name, const json& v, uint64_t data_size,
                      std::string_view source) {
  const std::string where = fmt::format("{}: tensor '{}'", source, name);
  if (!v.is_object())
    throw Error(fmt::format("{}: entry must be an object, got {}", where, excerpt(v)));
  TensorInfo t;
  t.name = name;
  t.source = std::string(source);

  const json* dtype = detail::find_field(v, "dtype");
  if (!dtype || !dtype->is_string())
    throw Error(fmt::format("{}: missing or non-string 'dtype'", where));
  const auto parsed = parse_dtype(dtype->get<std::string>());
  if (!parsed)
    throw Error(fmt::format("{}: unknown dtype {} (not a safetensors dtype)", where, excerpt(*dtype)));
  t.dtype = *parsed;

  const json* shape = detail::find_field(v, "shape");
  if (!shape || !shape->is_array())
    throw Error(fmt::format("{}: missing or non-array 'shape'", where));
  uint64_t bytes = dtype_size(t.dtype);
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      throw Error(fmt::format("{}: shape {} must hold non-negative integers", where, excerpt(*shape)));
    const uint64_t dim = d.get<uint64_t>();
    if (bytes != 0 && dim > std::numeric_limits<uint64_t>::max() / bytes)
      throw Error(fmt::format("{}: shape {} overflows 64-bit byte counts", where, excerpt(*shape)));
    bytes *= dim;
    t.shape.push_back(int64_t(dim));
  }

  const json* offsets = detail::find_field(v, "data_offsets");
  if (!offsets || !offsets->is_array() || offsets->size() != 2)
    throw Error(fmt::format("{}: 'data_offsets' must be [begin, end]", where));
  const uint64_t begin = read_offset((*offsets)[0], where);
  const uint64_t end = read_offset((*offsets)[1], where);
  if (begin > end)
    throw Error(fmt::format("{}: data_offsets [{}, {}] end before they begin", where, begin, end));
  if (end > data_size)
    throw Error(fmt::format("{}: data_offsets [{}, {}] out of range: the data region is {} bytes", where,
                            begin, end, data_size));
  if (end - begin != bytes)
    throw Error(fmt::format("{}: data size mismatch: dtype {} shape {} needs {} bytes, data_offsets "
                            "[{}, {}] hold {}",
                            where, dtype_name(t.dtype), shape_string(t.shape), bytes, begin, end,
                            end - begin));
  t.file_offset = begin;  // relative to the data region until parse_safetensors finishes
  return t;
}

// The tensors, ordered by offset, must tile [0, data_size) exactly.
void check_coverage(const std::vector<TensorInfo>& tensors, uint64_t data_size, std::string_view source) {
  std::vector<const TensorInfo*> order;
  order.reserve(tensors.size());
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    if (a->file_offset != b->file_offset) return a->file_offset < b->file_offset;
    return a->data.size() < b->data.size();
  });
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : order) {
    const uint64_t begin = t->file_offset, end = begin + t->data.size();
    if (begin < covered)
      throw Error(fmt::format("{}: tensor '{}' data_offsets [{}, {}] overlap tensor '{}' [{}, {}]",
                              source, t->name, begin, end, prev->name, prev->file_offset,
                              prev->file_offset + prev->data.size()));
    if (begin > covered)
      throw Error(fmt::format("{}: bytes [{}, {}) of the data region belong to no tensor (gap before "
                              "tensor '{}')",
                              source, covered, begin, t->name));
    covered = end;
    prev = t;
  }
  if (covered != data_size)
    throw Error(fmt::format("{}: data size mismatch: the data region is {} bytes but the tensors "
                            "cover {}",
                            source, data_size, covered));
}

}  // namespace

SafetensorsContents parse_safetensors(std::span<const std::byte> file, std::string_view source) {
  if (file.size() < 8)
    throw Error(fmt::format("{}: truncated: {} bytes, too short for the 8-byte header length", source,
                            file.size()));
  const uint64_t header_len = read_le64(file.data());
  if (header_len > file.size() - 8)
    throw Error(fmt::format("{}: truncated: header length {} runs past the end of the file ({} bytes)",
                            source, header_len, file.size()));
  if (header_len > kMaxHeaderBytes)
    throw Error(fmt::format("{}: header length {} exceeds the {}-byte limit", source, header_len,
                            kMaxHeaderBytes));

  SafetensorsContents out;
  out.data_begin = 8 + header_len;
  const uint64_t data_size = file.size() - out.data_begin;
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, header_len);
  const json header = detail::parse_json(text, fmt::format("{}: header", source));
  if (!header.is_object())
    throw Error(fmt::format("{}: header must be a JSON object, got {}", source, excerpt(header)));

  try {
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") {
        out.metadata = read_metadata(value, source);
        continue;
      }
      TensorInfo t = read_entry(key, value, data_size, source);
      t.data = file.subspan(out.data_begin + t.file_offset, t.numel() * dtype_size(t.dtype));
      out.tensors.push_back(std::move(t));
    }
  } catch (const json::exception& e) {  // defensive: every access above is type-checked
    throw Error(fmt::format("{}: malformed header: {}", source, e.what()));
  }
  check_coverage(out.tensors, data_size, source);
  for (auto& t : out.tensors) t.file_offset += out.data_begin;
  return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : map_(path), contents_(parse_safetensors(map_.bytes(), path.string())) {}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto& ts = contents_.tensors;
  const auto it = std::lower_bound(ts.begin(), ts.end(), name,
                                   [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != ts.end() && it->name == name ? &*it : nullptr;
}

}  // namespace trellis::format
