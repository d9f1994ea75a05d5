// Writing safetensors files, atomically (see atomic_file.hpp): a reader never
// sees a partial file, and a failed write leaves the old file (if any).
//
// Layout: tensors ordered by element size (largest first) then name, the
// header padded with spaces to a multiple of 8 bytes, so every tensor's data
// is aligned to its element size in the file (and in a mapping of it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "trellis/format/dtype.hpp"

namespace trellis::format {

struct TensorToWrite {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // borrowed; exactly shape-product × dtype-size bytes
};

// Throws trellis::Error (naming the tensor) on an empty, duplicate or
// reserved ("__metadata__") name, a negative dimension or a data size that
// does not match dtype and shape; nothing is written then.
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes a `model.safetensors.index.json`: {"metadata": {"total_size": N},
// "weight_map": {tensor: shard file name}}.
void write_safetensors_index(const std::filesystem::path& path,
                             const std::map<std::string, std::string>& weight_map,
                             uint64_t total_size);

}  // namespace trellis::format
