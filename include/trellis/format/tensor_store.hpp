// TensorStore: the tensors of a model as one name -> TensorInfo map, over a
// single safetensors file or the shards listed by a
// `model.safetensors.index.json` ({"weight_map": {tensor: shard file}}).
//
// Index rules (each failure a trellis::Error naming the index, shard or
// tensor): "weight_map" is an object of strings; shard names are plain file
// names in the index's directory (no path separators); every listed tensor is
// in its shard; every tensor of a shard is listed, and listed for that shard
// (so no tensor lives in two shards).
#pragma once
#include <filesystem>
#include <string_view>
#include <vector>

#include "trellis/format/safetensors.hpp"

namespace trellis::format {

class TensorStore {
 public:
  // model.safetensors.index.json when the directory has one, else model.safetensors.
  static TensorStore open_dir(const std::filesystem::path& dir);
  static TensorStore open_file(const std::filesystem::path& file);
  static TensorStore open_index(const std::filesystem::path& index);

  // Every tensor, sorted by name. Pointers stay valid while the store lives.
  const std::vector<const TensorInfo*>& tensors() const { return sorted_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }
  // The file or index the store was opened from.
  const std::filesystem::path& origin() const { return origin_; }

  const TensorInfo* find(std::string_view name) const;
  // Like find, but a missing tensor is a trellis::Error naming it and the origin.
  const TensorInfo& at(std::string_view name) const;

 private:
  explicit TensorStore(std::filesystem::path origin) : origin_(std::move(origin)) {}
  void index_tensors();

  std::filesystem::path origin_;
  std::vector<SafetensorsFile> files_;
  std::vector<const TensorInfo*> sorted_;
};

}  // namespace trellis::format
