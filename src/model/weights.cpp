// load_weights (contract in trellis/model/weights.hpp): find each tensor,
// check its shape against the architecture, hand it to the backend.
#include "trellis/model/weights.hpp"

#include <string>
#include <vector>

#include "trellis/error.hpp"
#include "trellis/model/rope.hpp"

namespace trellis::model {
namespace {

void check_shape(const format::TensorInfo& t, const std::vector<int64_t>& shape) {
  if (t.shape != shape)
    throw Error(t.source + ": tensor '" + t.name + "' must be " + format::shape_string(shape) + ", got " +
                format::shape_string(t.shape));
}

class Loader {
 public:
  Loader(const format::ModelDir& dir, Backend& backend) : dir_(dir), backend_(backend) {}

  // The trellis layer of `module`, else its plain weight; [out, in] either way.
  LinearSource linear(const std::string& module, int64_t out, int64_t in) const {
    LinearSource s;
    s.name = module;
    s.trellis = dir_.find_trellis(module);
    if (!s.trellis) {
      s.dense = &dir_.store().at(module + ".weight");
      check_shape(*s.dense, {out, in});
    } else if (s.out_features() != out || s.in_features() != in) {
      throw Error(s.trellis->weight->source + ": trellis layer '" + module + "' is [" +
                  std::to_string(s.out_features()) + ", " + std::to_string(s.in_features()) + "], must be [" +
                  std::to_string(out) + ", " + std::to_string(in) + "] ([out, in])");
    }
    return s;
  }

  const format::TensorInfo& plain(const std::string& name, const std::vector<int64_t>& shape) const {
    const std::string module = name.substr(0, name.rfind('.'));
    if (const auto* t = dir_.find_trellis(module))
      throw Error(t->weight->source + ": '" + module + "' is trellis-coded; only linear projections may be");
    const format::TensorInfo& t = dir_.store().at(name);
    check_shape(t, shape);
    return t;
  }

  std::unique_ptr<VectorWeight> vector(const std::string& name, int64_t n) const {
    return backend_.load_vector(plain(name, {n}));
  }

 private:
  const format::ModelDir& dir_;
  Backend& backend_;
};

}  // namespace

ModelWeights load_weights(const format::ModelDir& dir, const Architecture& a, Backend& backend) {
  const Loader load(dir, backend);
  ModelWeights w;
  const format::TensorInfo& embedding = load.plain("model.embed_tokens.weight", {a.vocab, a.hidden});
  w.embedding = backend.load_embedding(embedding);
  w.rope_inv_freq = backend.load_vector(rope_inverse_frequencies(a.head_dim, a.rope_theta, embedding.dtype));
  const int64_t q_cols = a.heads * a.head_dim, kv_cols = a.kv_heads * a.head_dim;
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_norm = load.vector(p + "input_layernorm.weight", a.hidden);
    l.q = backend.load_linear(load.linear(p + "self_attn.q_proj", q_cols, a.hidden));
    l.k = backend.load_linear(load.linear(p + "self_attn.k_proj", kv_cols, a.hidden));
    l.v = backend.load_linear(load.linear(p + "self_attn.v_proj", kv_cols, a.hidden));
    l.o = backend.load_linear(load.linear(p + "self_attn.o_proj", a.hidden, q_cols));
    if (a.qk_norm) {
      l.q_norm = load.vector(p + "self_attn.q_norm.weight", a.head_dim);
      l.k_norm = load.vector(p + "self_attn.k_norm.weight", a.head_dim);
    }
    l.post_attention_norm = load.vector(p + "post_attention_layernorm.weight", a.hidden);
    l.gate_up = backend.load_gate_up(load.linear(p + "mlp.gate_proj", a.intermediate, a.hidden),
                                     load.linear(p + "mlp.up_proj", a.intermediate, a.hidden));
    l.down = backend.load_linear(load.linear(p + "mlp.down_proj", a.hidden, a.intermediate));
    w.layers.push_back(std::move(l));
  }
  w.final_norm = load.vector("model.norm.weight", a.hidden);
  if (a.tied_embeddings) {
    LinearSource head;
    head.name = "model.embed_tokens";
    head.dense = &embedding;
    w.lm_head = backend.load_linear(head);
  } else {
    w.lm_head = backend.load_linear(load.linear("lm_head", a.vocab, a.hidden));
  }
  return w;
}

}  // namespace trellis::model
