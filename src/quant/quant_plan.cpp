// plan_quantization (contract in include/trellis/quant/quant_plan.hpp).
#include "trellis/quant/quant_plan.hpp"

#include <fnmatch.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "trellis/error.hpp"
#include "trellis/format/quantization.hpp"
#include "trellis/model/architecture.hpp"

namespace trellis::quant {
namespace {

using format::DType;
using format::TensorInfo;

struct Expected {
  std::vector<int64_t> shape;
  bool linear = false;  // a decoder-layer linear (coded by default)
  bool head = false;    // lm_head (coded with quantize_head)
  bool optional = false;
};

// Every tensor of the architecture, by name (model/weights.hpp).
std::map<std::string, Expected> expected_tensors(const model::Architecture& a) {
  std::map<std::string, Expected> e;
  const int64_t q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
  e["model.embed_tokens.weight"] = {{a.vocab, a.hidden}};
  e["model.norm.weight"] = {{a.hidden}};
  e["lm_head.weight"] = {{a.vocab, a.hidden}, false, true, a.tied_embeddings};
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    e[p + "input_layernorm.weight"] = {{a.hidden}};
    e[p + "post_attention_layernorm.weight"] = {{a.hidden}};
    e[p + "self_attn.q_proj.weight"] = {{q, a.hidden}, true};
    e[p + "self_attn.k_proj.weight"] = {{kv, a.hidden}, true};
    e[p + "self_attn.v_proj.weight"] = {{kv, a.hidden}, true};
    e[p + "self_attn.o_proj.weight"] = {{a.hidden, q}, true};
    if (a.qk_norm) {
      e[p + "self_attn.q_norm.weight"] = {{a.head_dim}};
      e[p + "self_attn.k_norm.weight"] = {{a.head_dim}};
    }
    e[p + "mlp.gate_proj.weight"] = {{a.intermediate, a.hidden}, true};
    e[p + "mlp.up_proj.weight"] = {{a.intermediate, a.hidden}, true};
    e[p + "mlp.down_proj.weight"] = {{a.hidden, a.intermediate}, true};
  }
  return e;
}

std::string strip_weight(const std::string& name) { return name.substr(0, name.size() - std::string(".weight").size()); }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Modules reading the same input, coded along it, can share one sign vector.
std::string sign_group_of(const std::string& module, int axis) {
  if (axis != 1) return module;
  const auto dot = module.rfind('.');
  const std::string name = module.substr(dot + 1), parent = module.substr(0, dot);
  if (name == "q_proj" || name == "k_proj" || name == "v_proj") return parent + ".qkv";
  if (name == "gate_proj" || name == "up_proj") return parent + ".gate_up";
  return module;
}

void check_rules(const std::vector<ModuleRule>& rules, const char* flag, const std::vector<CodedModule>& coded) {
  for (const auto& r : rules) {
    bool any = false;
    for (const auto& m : coded) any = any || module_matches(r.pattern, m.module);
    if (!any) throw Error(fmt::format("{} '{}={}': the pattern matches no coded module", flag, r.pattern, r.value));
  }
}

}  // namespace

bool module_matches(const std::string& pattern, const std::string& module) {
  if (pattern.find_first_of("*?[") != std::string::npos) return ::fnmatch(pattern.c_str(), module.c_str(), 0) == 0;
  return module.find(pattern) != std::string::npos;
}

QuantPlan plan_quantization(const format::ModelConfig& config, const std::string& config_source,
                            const format::TensorStore& store, const PlanOptions& o) {
  if (o.bits < 2 || o.bits > 4) throw Error(fmt::format("--bits {}: bits must be 2, 3 or 4", o.bits));
  for (const auto& r : o.bits_for)
    if (r.value < 2 || r.value > 4)
      throw Error(fmt::format("--bits-for '{}={}': bits must be 2, 3 or 4", r.pattern, r.value));
  for (const auto& r : o.axis_for)
    if (r.value != 0 && r.value != 1)
      throw Error(fmt::format("--axis-for '{}={}': axis must be 0 or 1", r.pattern, r.value));
  format::check_trellis_params({o.bits, o.L, o.T, 1, o.rotate ? format::Rotation::hadamard : format::Rotation::none},
                               "quantize options");
  if (!config.quantization.modules.empty() || config.quantization.default_bits)
    throw Error(config_source + ": the model is already quantized (config.json has a quantization object)");
  const model::Architecture arch = model::architecture_of(config, config_source);
  if (o.quantize_head && arch.tied_embeddings)
    throw Error(config_source + ": --quantize-head: lm_head is tied to the embedding (tie_word_embeddings), "
                "so it is not a separate linear to code");

  const auto expected = expected_tensors(arch);
  std::set<std::string> seen;
  QuantPlan plan;
  plan.L = o.L;
  plan.T = o.T;
  plan.rotate = o.rotate;
  for (const TensorInfo* t : store.tensors()) {
    const auto it = expected.find(t->name);
    if (it == expected.end())
      throw Error(fmt::format("{}: tensor '{}' is not part of a {} model with {} layers (unexpected tensor)",
                              t->source, t->name, arch.name, arch.layers));
    if (t->dtype != DType::BF16 && t->dtype != DType::F16 && t->dtype != DType::F32)
      throw Error(fmt::format("{}: tensor '{}' has dtype {}; supported: BF16, F16, F32", t->source, t->name,
                              format::dtype_name(t->dtype)));
    const Expected& want = it->second;
    if (t->shape != want.shape)
      throw Error(fmt::format("{}: tensor '{}' must be {} for this config.json, got {}", t->source, t->name,
                              format::shape_string(want.shape), format::shape_string(t->shape)));
    seen.insert(t->name);
    if (!(want.linear || (want.head && o.quantize_head))) {
      plan.copied.push_back(t);
      continue;
    }
    CodedModule m;
    m.module = strip_weight(t->name);
    m.weight = t;
    m.out_features = t->shape[0];
    m.in_features = t->shape[1];
    m.k = o.bits;
    m.axis = ends_with(m.module, ".down_proj") ? 0 : 1;
    for (const auto& r : o.bits_for)
      if (module_matches(r.pattern, m.module)) m.k = r.value;
    for (const auto& r : o.axis_for)
      if (module_matches(r.pattern, m.module)) m.axis = r.value;
    const int64_t rows = m.axis == 1 ? m.out_features : m.in_features;
    const int64_t cols = m.axis == 1 ? m.in_features : m.out_features;
    if (rows % 8 != 0)
      throw Error(fmt::format("{}: tensor '{}' {} coded on axis {}: stored rows ({}) must be a multiple of 8",
                              t->source, t->name, format::shape_string(t->shape), m.axis, rows));
    if (cols % o.T != 0)
      throw Error(fmt::format("{}: tensor '{}' {} coded on axis {}: the coded axis ({}) must be a multiple of "
                              "the group size T = {}",
                              t->source, t->name, format::shape_string(t->shape), m.axis, cols, o.T));
    m.sign_group = sign_group_of(m.module, m.axis);
    plan.coded_weights += m.out_features * m.in_features;
    plan.coded.push_back(std::move(m));
  }
  for (const auto& [name, want] : expected)
    if (!want.optional && !seen.count(name))
      throw Error(fmt::format("{}: tensor '{}' is missing ({} needs it)", store.origin().string(), name, arch.name));
  check_rules(o.bits_for, "--bits-for", plan.coded);
  check_rules(o.axis_for, "--axis-for", plan.coded);
  return plan;
}

}  // namespace trellis::quant
