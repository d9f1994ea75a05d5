// Altered copies of the fixture model for the eval tests: the same files,
// with model.safetensors rewritten through `edit` (each tensor's name,
// shape and bytes, changeable) and config.json through `edit_config`.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../model/model_files.hpp"
#include "trellis/format/safetensors.hpp"

namespace trellis::test {

inline const std::filesystem::path kFixtureDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";
inline const std::filesystem::path kShakespeare = TRELLIS_SOURCE_DIR "/data/tinyshakespeare.txt";

using TensorEdit = std::function<void(OwnedTensor&)>;
using ConfigEdit = std::function<void(nlohmann::json&)>;

inline void copy_fixture(const std::filesystem::path& out, const TensorEdit& edit, const ConfigEdit& edit_config = {}) {
  namespace fs = std::filesystem;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(kFixtureDir / f, out / f);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(kFixtureDir / "config.json"));
  if (edit_config) edit_config(config);
  write_file(out / "config.json", config.dump(2));
  const format::SafetensorsFile in(kFixtureDir / "model.safetensors");
  std::vector<OwnedTensor> tensors;
  for (const auto& t : in.tensors()) {
    tensors.push_back({t.name, t.dtype, t.shape, std::vector<std::byte>(t.data.begin(), t.data.end())});
    edit(tensors.back());
  }
  write_tensors(out / "model.safetensors", tensors);
}

// bf16 elements of a tensor, in place.
inline void for_each_bf16(OwnedTensor& t, const std::function<uint16_t(uint16_t)>& f) {
  for (size_t i = 0; i + 1 < t.data.size(); i += 2) {
    uint16_t v;
    std::memcpy(&v, &t.data[i], 2);
    v = f(v);
    std::memcpy(&t.data[i], &v, 2);
  }
}

}  // namespace trellis::test
