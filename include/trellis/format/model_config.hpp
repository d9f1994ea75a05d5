// ModelConfig: what the engine reads from a Hugging Face config.json.
//
// Required: model_type, hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, vocab_size (positive integers). Defaults:
// num_key_value_heads = num_attention_heads (must divide it); head_dim =
// hidden_size / num_attention_heads (must divide exactly when not given);
// rms_norm_eps = 1e-6; tie_word_embeddings = false (Qwen3/Llama); rope theta
// from top-level "rope_theta" or "rope_parameters.rope_theta" (newer
// transformers; both present must agree), default 10000; eos_token_id an
// integer or a list. Any wrong type or value is a trellis::Error naming the
// file and field; a missing required field's message names the model_type
// too (another architecture's config lacks these fields).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/format/quantization.hpp"

namespace trellis::format {

struct ModelConfig {
  std::string model_type;
  std::vector<std::string> architectures;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::string rope_type = "default";  // rope_parameters.rope_type or rope_scaling.rope_type/type
  std::string hidden_act = "silu";
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  std::optional<int64_t> max_position_embeddings;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  QuantizationConfig quantization;  // empty when the model is not quantized
};

// Parses config.json text; `source` names the file in messages.
ModelConfig parse_model_config(std::string_view json_text, std::string_view source);
// Reads and parses a config.json file.
ModelConfig load_model_config(const std::filesystem::path& config_json);

}  // namespace trellis::format
