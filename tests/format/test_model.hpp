// A small trellis-quantized model directory for tests: config.json with
// three quantization entries and their tensors, plus two plain tensors.
//   gate_proj  k=2 L=12 T=256 axis 1, row-major        .weight U32 [256, 32]     out 256, in 512
//   down_proj  k=3 L=12 T=256 axis 0, k3-interleaved   .weight U32 [1, 256, 48]  out 512, in 256
//   q_proj     k=4 L=16 T=256 axis 1, hadamard         .weight U32 [64, 64]      out 64,  in 512, .signs I8 [512]
//   model.embed_tokens.weight BF16 [16, 8], model.norm.weight BF16 [8]
// Codes are arbitrary; scales are 1.0; signs alternate.
#pragma once
#include <nlohmann/json.hpp>

#include "test_files.hpp"

namespace trellis::test {

struct SmallModel {
  static constexpr int64_t kParameters = 256 * 512 + 512 * 256 + 64 * 512 + 16 * 8 + 8;
  static constexpr uint64_t kCodedBytes = (256 * 32 * 4 + 256 * 2) + (256 * 48 * 4 + 256 * 2) + (64 * 64 * 4 + 64 * 2 + 512);
  static constexpr int64_t kCodedParameters = 256 * 512 + 512 * 256 + 64 * 512;
};

inline nlohmann::json small_model_config() {
  auto entry = [](int k, int L, int axis) {
    return nlohmann::json{{"mode", "trellis"}, {"bits", k}, {"group_size", 256},
                          {"trellis", {{"L", L}, {"code", "1mad"}, {"axis", axis}}}};
  };
  nlohmann::json q = {{"model.layers.0.mlp.gate_proj", entry(2, 12, 1)},
                      {"model.layers.0.mlp.down_proj", entry(3, 12, 0)},
                      {"model.layers.0.self_attn.q_proj", entry(4, 16, 1)}};
  q["model.layers.0.self_attn.q_proj"]["rotation"] = "hadamard";
  return {{"model_type", "qwen3"}, {"hidden_size", 512},        {"intermediate_size", 256},
          {"num_hidden_layers", 1}, {"num_attention_heads", 8}, {"vocab_size", 16},
          {"quantization", q}};
}

inline std::vector<OwnedTensor> small_model_tensors() {
  auto codes = [](std::size_t n) {
    std::vector<uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = uint32_t(i * 2654435761u);
    return v;
  };
  auto ones = [](std::size_t n) { return std::vector<uint16_t>(n, 0x3c00); };
  std::vector<int8_t> signs(512);
  for (std::size_t i = 0; i < signs.size(); ++i) signs[i] = i % 2 ? -1 : 1;
  using format::DType;
  return {
      make_tensor("model.layers.0.mlp.gate_proj.weight", DType::U32, {256, 32}, codes(256 * 32)),
      make_tensor("model.layers.0.mlp.gate_proj.scales", DType::F16, {256}, ones(256)),
      make_tensor("model.layers.0.mlp.down_proj.weight", DType::U32, {1, 256, 48}, codes(256 * 48)),
      make_tensor("model.layers.0.mlp.down_proj.scales", DType::F16, {256}, ones(256)),
      make_tensor("model.layers.0.self_attn.q_proj.weight", DType::U32, {64, 64}, codes(64 * 64)),
      make_tensor("model.layers.0.self_attn.q_proj.scales", DType::F16, {64}, ones(64)),
      make_tensor("model.layers.0.self_attn.q_proj.signs", DType::I8, {512}, signs),
      make_tensor("model.embed_tokens.weight", DType::BF16, {16, 8}, std::vector<uint16_t>(128, 0x3f80)),
      make_tensor("model.norm.weight", DType::BF16, {8}, std::vector<uint16_t>(8, 0x3f80)),
  };
}

inline void write_small_model(const std::filesystem::path& dir,
                              const nlohmann::json& config = small_model_config(),
                              const std::vector<OwnedTensor>& tensors = small_model_tensors()) {
  write_file(dir / "config.json", config.dump(2));
  write_tensors(dir / "model.safetensors", tensors);
}

}  // namespace trellis::test
