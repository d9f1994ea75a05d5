// ModelDir: a Hugging Face style model directory opened and checked as a
// whole — config.json (ModelConfig), the tensors (TensorStore: single file or
// sharded) and, for every quantization entry, its checked TrellisTensor.
//
// Rules beyond those of the parts (trellis::Error naming the entry/tensor):
// every quantization entry has `<module>.weight` and `<module>.scales`; no
// `*.scales` or `*.signs` tensor exists without a quantization entry for its
// module.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/format/model_config.hpp"
#include "trellis/format/tensor_store.hpp"
#include "trellis/format/trellis_tensor.hpp"

namespace trellis::format {

// One logical tensor of the model: a plain tensor, or a trellis layer whose
// `.weight`, `.scales` and `.signs` are counted together under the
// `.weight` name.
struct ManifestEntry {
  std::string name;
  const TensorInfo* tensor = nullptr;      // plain tensors
  const TrellisTensor* trellis = nullptr;  // trellis layers
  std::vector<int64_t> shape;              // plain: stored shape; trellis: [out, in]
  int64_t parameters = 0;                  // trellis: out·in
  uint64_t bytes = 0;
};

class ModelDir {
 public:
  explicit ModelDir(const std::filesystem::path& dir);

  const std::filesystem::path& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const TensorStore& store() const { return store_; }
  // Sorted by module path.
  const std::vector<TrellisTensor>& trellis_tensors() const { return trellis_; }
  // The trellis layer of `module` (e.g. "model.layers.0.mlp.gate_proj"), or nullptr.
  const TrellisTensor* find_trellis(std::string_view module) const;
  // Every logical tensor, sorted by name.
  std::vector<ManifestEntry> manifest() const;

 private:
  std::filesystem::path path_;
  ModelConfig config_;
  TensorStore store_;
  std::vector<TrellisTensor> trellis_;
};

}  // namespace trellis::format
