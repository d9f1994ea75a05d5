// ModelWeights: every weight of a llama/qwen3 decoder as backend handles,
// loaded from a ModelDir by Hugging Face tensor names:
//   model.embed_tokens.weight                       [vocab, hidden]
//   model.layers.N.input_layernorm.weight           [hidden]
//   model.layers.N.self_attn.{q,k,v,o}_proj         q [heads·d, hidden], k/v [kv_heads·d, hidden], o [hidden, heads·d]
//   model.layers.N.self_attn.{q,k}_norm.weight      [d] (qwen3)
//   model.layers.N.post_attention_layernorm.weight  [hidden]
//   model.layers.N.mlp.{gate,up,down}_proj          gate/up [intermediate, hidden], down [hidden, intermediate]
//   model.norm.weight                               [hidden]
//   lm_head                                         [vocab, hidden]; the embedding when tied
// plus the RoPE inverse frequencies (trellis/model/rope.hpp), rounded to the
// embedding's dtype (the checkpoint's float dtype).
// A projection is the trellis layer of its module when the quantization
// config has one, else the plain `<module>.weight`. Errors (trellis::Error)
// name the tensor: missing, wrong shape, a trellis-coded embedding or norm.
#pragma once
#include <memory>
#include <vector>

#include "trellis/format/model_dir.hpp"
#include "trellis/model/architecture.hpp"
#include "trellis/model/backend.hpp"

namespace trellis::model {

struct LayerWeights {
  std::unique_ptr<VectorWeight> input_norm;
  std::unique_ptr<LinearWeight> q, k, v, o;
  std::unique_ptr<VectorWeight> q_norm, k_norm;  // qwen3 only
  std::unique_ptr<VectorWeight> post_attention_norm;
  std::unique_ptr<GateUpWeight> gate_up;
  std::unique_ptr<LinearWeight> down;
};

struct ModelWeights {
  std::unique_ptr<EmbeddingWeight> embedding;
  std::vector<LayerWeights> layers;
  std::unique_ptr<VectorWeight> final_norm;
  std::unique_ptr<LinearWeight> lm_head;
  std::unique_ptr<VectorWeight> rope_inv_freq;  // [head_dim / 2]
};

ModelWeights load_weights(const format::ModelDir& dir, const Architecture& arch, Backend& backend);

}  // namespace trellis::model
