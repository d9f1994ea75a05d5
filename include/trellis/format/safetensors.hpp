// Reading safetensors files: an 8-byte little-endian header length N, N
// bytes of JSON header, then the data region. The header maps each tensor
// name to {dtype, shape, data_offsets: [begin, end]} (offsets relative to the
// data region) and may hold "__metadata__" (string -> string).
//
// Validation (every failure is a trellis::Error naming the file, the tensor
// or field, and the rule): the file holds the 8 length bytes; N is at most
// kMaxHeaderBytes and does not run past the end of the file; the header is a
// JSON object; every dtype is known; shapes are non-negative integers whose
// element count times the dtype size equals end - begin (no overflow);
// offsets lie inside the data region; the tensors neither overlap nor leave
// gaps and cover the data region exactly (data size = file size - 8 - N).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/format/mapped_file.hpp"
#include "trellis/format/tensor_info.hpp"

namespace trellis::format {

// Headers larger than this are rejected (the reference implementation's limit).
inline constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct SafetensorsContents {
  std::vector<TensorInfo> tensors;  // sorted by name; data spans point into the parsed bytes
  std::map<std::string, std::string> metadata;
  uint64_t data_begin = 0;  // 8 + N
};

// Parses and validates a whole safetensors file image. `source` names the
// file in messages and in TensorInfo::source.
SafetensorsContents parse_safetensors(std::span<const std::byte> file, std::string_view source);

// One safetensors file, mapped and validated.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return map_.path(); }
  const std::vector<TensorInfo>& tensors() const { return contents_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return contents_.metadata; }
  // The tensor named `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;

 private:
  MappedFile map_;
  SafetensorsContents contents_;
};

}  // namespace trellis::format
