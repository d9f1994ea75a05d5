// Architecture: the decoder the forward pass runs, read from a ModelConfig.
//
// Supported model_type values (one forward pass, trellis/model/session.hpp):
//   llama  pre-norm RMSNorm decoder, GQA attention with rotate-half RoPE,
//          SwiGLU MLP, final RMSNorm, LM head (tied to the embedding when
//          tie_word_embeddings);
//   qwen3  the same plus QK-norm: RMSNorm over head_dim on every q and k head
//          (weights self_attn.{q,k}_norm) before RoPE.
// Anything the forward pass cannot honour is a trellis::Error naming it and
// `source`: another model_type, a rope_type other than "default", a
// hidden_act other than silu, attention_bias, an odd head_dim.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "trellis/format/model_config.hpp"

namespace trellis::model {

struct Architecture {
  std::string name;  // model_type
  bool qk_norm = false;
  bool tied_embeddings = false;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab = 0;
  float rms_eps = 1e-6f;
  double rope_theta = 10000.0;
  int64_t max_positions = 0;  // 0 when config.json does not say
};

Architecture architecture_of(const format::ModelConfig& config, std::string_view source);

}  // namespace trellis::model
