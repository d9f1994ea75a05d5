// architecture_of (contract in trellis/model/architecture.hpp).
#include "trellis/model/architecture.hpp"

#include "trellis/error.hpp"

namespace trellis::model {

Architecture architecture_of(const format::ModelConfig& c, std::string_view source) {
  const std::string where(source);
  if (c.model_type != "qwen3" && c.model_type != "llama")
    throw Error(where + ": unsupported architecture '" + c.model_type + "' (model_type; supported: qwen3, llama)");
  if (c.rope_type != "default")
    throw Error(where + ": unsupported rope_type '" + c.rope_type + "' for " + c.model_type + " (supported: default)");
  if (c.hidden_act != "silu")
    throw Error(where + ": unsupported hidden_act '" + c.hidden_act + "' (supported: silu)");
  if (c.attention_bias) throw Error(where + ": attention_bias is not supported");
  if (c.head_dim % 2 != 0) throw Error(where + ": head_dim " + std::to_string(c.head_dim) + " must be even for RoPE");
  Architecture a;
  a.name = c.model_type;
  a.qk_norm = c.model_type == "qwen3";
  a.tied_embeddings = c.tie_word_embeddings;
  a.hidden = c.hidden_size;
  a.intermediate = c.intermediate_size;
  a.layers = c.num_hidden_layers;
  a.heads = c.num_attention_heads;
  a.kv_heads = c.num_key_value_heads;
  a.head_dim = c.head_dim;
  a.vocab = c.vocab_size;
  a.rms_eps = float(c.rms_norm_eps);
  a.rope_theta = c.rope_theta;
  a.max_positions = c.max_position_embeddings.value_or(0);
  return a;
}

}  // namespace trellis::model
