// The fixture model (models/shakespeare-qwen3-15m) and its Hugging Face
// references, shared by the model tests: one Model per test binary (loading
// maps the files; the tests only read it).
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/format/safetensors.hpp"
#include "trellis/model/cpu_backend.hpp"
#include "trellis/model/model.hpp"

namespace trellis::test {

inline const std::filesystem::path kFixtureDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";

inline const model::Model& fixture_model() {
  static const model::Model m(kFixtureDir, model::make_cpu_backend());
  return m;
}

inline nlohmann::json fixture_reference() {
  std::ifstream in(kFixtureDir / "reference.json");
  return nlohmann::json::parse(in);
}

}  // namespace trellis::test
