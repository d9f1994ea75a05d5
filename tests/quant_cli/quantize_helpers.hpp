// Helpers for the `trellis quantize` tests: running the binary, a small
// synthetic Hugging Face checkpoint (llama or qwen3, Gaussian bf16 weights)
// that the tests break on purpose, and what a failed run must leave behind.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shell.hpp"
#include "../format/test_files.hpp"
#include "trellis/half.hpp"

namespace trellis::test {

inline const std::string kFixture = std::string(TRELLIS_SOURCE_DIR) + "/models/shakespeare-qwen3-15m";

using Result = ShellResult;

inline std::string shq(const std::filesystem::path& p) { return shell_quote(p); }

// `trellis ARGS`, stdout and stderr.
inline Result trellis_cli(const std::string& args) { return run_shell(shq(TRELLIS_BIN) + " " + args + " 2>&1"); }

// Entries of `dir`'s parent whose names start with `dir`'s name (the output
// itself, `.tmp-` staging directories, `.old-` set-asides).
inline std::vector<std::string> output_traces(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  const std::string stem = dir.filename().string();
  for (const auto& e : std::filesystem::directory_iterator(dir.parent_path()))
    if (e.path().filename().string().rfind(stem, 0) == 0) found.push_back(e.path().filename().string());
  return found;
}

inline std::vector<uint16_t> gaussian_bf16(size_t n, uint64_t seed, float sigma) {
  std::vector<uint16_t> v(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&s] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  for (auto& x : v) {
    const double u1 = next() + 0x1.0p-54, u2 = next();
    x = float_to_bf16(float(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2)));
  }
  return v;
}

// One decoder layer: hidden 256, intermediate 512, 4 heads of 64 (2 kv
// heads), vocab 64; 589,824 linear weights.
struct SyntheticModel {
  nlohmann::json config = {{"model_type", "llama"},      {"architectures", {"LlamaForCausalLM"}},
                           {"hidden_size", 256},         {"intermediate_size", 512},
                           {"num_hidden_layers", 1},     {"num_attention_heads", 4},
                           {"num_key_value_heads", 2},   {"vocab_size", 64},
                           {"tie_word_embeddings", false}};
  std::vector<OwnedTensor> tensors;

  SyntheticModel() {
    using format::DType;
    auto add = [this](const std::string& name, std::vector<int64_t> shape) {
      size_t n = 1;
      for (auto d : shape) n *= size_t(d);
      tensors.push_back(make_tensor(name, DType::BF16, shape, gaussian_bf16(n, tensors.size() + 1, 0.02f)));
    };
    add("model.embed_tokens.weight", {64, 256});
    add("model.norm.weight", {256});
    add("lm_head.weight", {64, 256});
    const std::string p = "model.layers.0.";
    add(p + "input_layernorm.weight", {256});
    add(p + "post_attention_layernorm.weight", {256});
    add(p + "self_attn.q_proj.weight", {256, 256});
    add(p + "self_attn.k_proj.weight", {128, 256});
    add(p + "self_attn.v_proj.weight", {128, 256});
    add(p + "self_attn.o_proj.weight", {256, 256});
    add(p + "mlp.gate_proj.weight", {512, 256});
    add(p + "mlp.up_proj.weight", {512, 256});
    add(p + "mlp.down_proj.weight", {256, 512});
  }

  OwnedTensor* find(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  void remove(const std::string& name) {
    std::erase_if(tensors, [&](const OwnedTensor& t) { return t.name == name; });
  }
  void write(const std::filesystem::path& dir) const {
    std::filesystem::create_directories(dir);
    write_file(dir / "config.json", config.dump(2));
    write_file(dir / "tokenizer.json", "{\"synthetic\": true}");
    write_tensors(dir / "model.safetensors", tensors);
  }
};

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace trellis::test
