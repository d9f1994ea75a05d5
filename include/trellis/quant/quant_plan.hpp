// QuantPlan: what `trellis quantize` will do to a Hugging Face checkpoint,
// decided and checked before any weight is coded.
//
// The checkpoint must be an architecture the engine runs (model_type qwen3
// or llama, model/architecture.hpp) and not already quantized. Its tensors
// must be exactly those of that architecture (names and shapes as in
// model/weights.hpp: embedding, per-layer norms, q/k/v/o, qwen3's q/k norms,
// gate/up/down, final norm, lm_head unless the embeddings are tied — a tied
// checkpoint may still carry lm_head), each bf16, fp16 or fp32.
//
// Coded: every decoder-layer linear (self_attn.{q,k,v,o}_proj,
// mlp.{gate,up,down}_proj), plus lm_head with quantize_head (not possible
// when it is tied to the embedding). Default bits = options.bits; axis 0 for
// down_proj, 1 for the rest. Rules override per module: a pattern with any
// of * ? [ is a glob matched against the whole module path (fnmatch), any
// other pattern matches as a substring; the last matching rule wins; a rule
// matching no coded module is an error (a typo would silently do nothing).
// Every coded module's stored rows must be a multiple of 8 and its coded
// axis a multiple of T. Everything else is copied unchanged.
//
// Each failure is one trellis::Error naming the file, tensor, field or rule.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trellis/format/model_config.hpp"
#include "trellis/format/tensor_store.hpp"

namespace trellis::quant {

struct ModuleRule {
  std::string pattern;
  int value = 0;
};

struct PlanOptions {
  int bits = 3;  // 2..4
  int L = 12;
  int T = 256;
  bool rotate = false;
  bool quantize_head = false;
  std::vector<ModuleRule> bits_for;  // value: bits
  std::vector<ModuleRule> axis_for;  // value: 0 or 1
};

struct CodedModule {
  std::string module;  // e.g. "model.layers.0.mlp.down_proj"
  const format::TensorInfo* weight = nullptr;
  int64_t out_features = 0;
  int64_t in_features = 0;
  int k = 0;
  int axis = 1;
  std::string sign_group;  // modules with one input and one coded axis share rotation signs
};

struct QuantPlan {
  std::vector<CodedModule> coded;                 // in tensor-name order
  std::vector<const format::TensorInfo*> copied;  // in tensor-name order
  int L = 12;
  int T = 256;
  bool rotate = false;
  int64_t coded_weights = 0;
};

// True when `pattern` selects `module` (glob or substring, as above).
bool module_matches(const std::string& pattern, const std::string& module);

// `config_source` names config.json in messages.
QuantPlan plan_quantization(const format::ModelConfig& config, const std::string& config_source,
                            const format::TensorStore& store, const PlanOptions& options);

}  // namespace trellis::quant
