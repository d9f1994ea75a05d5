// config.json -> ModelConfig (rules in model_config.hpp).
#include "trellis/format/model_config.hpp"


#include <fmt/format.h>

#include "json_fields.hpp"
#include "quantization_parse.hpp"
#include "trellis/error.hpp"

namespace trellis::format {
namespace {

using namespace detail;

// A positive integer field. Its absence names the config's model_type too: a
// config without the llama-family fields is most often another architecture's.
int64_t positive(const json& obj, std::string_view key, std::string_view where, std::string_view model_type) {
  const auto v = read_int(obj, key, where);
  if (!v) throw Error(fmt::format("{}: missing required field '{}' (model_type '{}')", where, key, model_type));
  if (*v <= 0) throw Error(fmt::format("{}: field '{}' = {} must be positive", where, key, *v));
  return *v;
}

double rope_theta(const json& doc, std::string_view where) {
  std::optional<double> nested;
  if (const json* rp = find_field(doc, "rope_parameters")) {
    if (!rp->is_object()) throw Error(fmt::format("{}: field 'rope_parameters' must be an object", where));
    nested = read_number(*rp, "rope_theta", fmt::format("{}: rope_parameters", where));
  }
  const auto top = read_number(doc, "rope_theta", where);
  if (top && nested && *top != *nested)
    throw Error(fmt::format("{}: rope_theta {} and rope_parameters.rope_theta {} disagree", where, *top,
                            *nested));
  const double theta = top ? *top : nested ? *nested : 10000.0;
  if (theta <= 0) throw Error(fmt::format("{}: rope theta {} must be positive", where, theta));
  return theta;
}

std::string rope_type(const json& doc, std::string_view where) {
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const json* r = find_field(doc, key);
    if (!r || !r->is_object()) continue;
    const std::string rwhere = fmt::format("{}: {}", where, key);
    if (auto t = read_string(*r, "rope_type", rwhere)) return *t;
    if (auto t = read_string(*r, "type", rwhere)) return *t;
  }
  return "default";
}

std::vector<int64_t> eos_ids(const json& doc, std::string_view where) {
  const json* v = find_field(doc, "eos_token_id");
  if (!v) return {};
  if (v->is_number_integer()) return {*read_int(doc, "eos_token_id", where)};
  if (!v->is_array())
    throw Error(fmt::format("{}: field 'eos_token_id' must be an integer or a list of integers", where));
  std::vector<int64_t> ids;
  for (const json& id : *v) {
    if (!id.is_number_integer() || (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(INT64_MAX)))
      throw Error(fmt::format("{}: field 'eos_token_id' holds a non-integer {}", where, excerpt(id)));
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

QuantizationConfig quantization(const json& doc, std::string_view where) {
  const json* q = find_field(doc, "quantization");
  const json* alias = find_field(doc, "quantization_config");
  if (q && alias && *q != *alias)
    throw Error(fmt::format("{}: 'quantization' and 'quantization_config' are both present and differ",
                            where));
  if (!q) q = alias;
  if (!q) return {};
  return parse_quantization(*q, fmt::format("{}: {}", where, q == alias ? "quantization_config" : "quantization"));
}

ModelConfig parse(const json& doc, std::string_view where) {
  if (!doc.is_object()) throw Error(fmt::format("{}: must be a JSON object", where));
  ModelConfig c;
  const auto model_type = read_string(doc, "model_type", where);
  if (!model_type) throw Error(fmt::format("{}: missing required field 'model_type'", where));
  c.model_type = *model_type;
  if (const json* a = find_field(doc, "architectures")) {
    if (!a->is_array()) throw Error(fmt::format("{}: field 'architectures' must be a list of strings", where));
    for (const json& name : *a) {
      if (!name.is_string())
        throw Error(fmt::format("{}: field 'architectures' holds a non-string {}", where, excerpt(name)));
      c.architectures.push_back(name.get<std::string>());
    }
  }
  c.hidden_size = positive(doc, "hidden_size", where, c.model_type);
  c.intermediate_size = positive(doc, "intermediate_size", where, c.model_type);
  c.num_hidden_layers = positive(doc, "num_hidden_layers", where, c.model_type);
  c.num_attention_heads = positive(doc, "num_attention_heads", where, c.model_type);
  c.vocab_size = positive(doc, "vocab_size", where, c.model_type);
  c.num_key_value_heads = find_field(doc, "num_key_value_heads")
                              ? positive(doc, "num_key_value_heads", where, c.model_type)
                              : c.num_attention_heads;
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_key_value_heads {} does not divide num_attention_heads {}", where,
                            c.num_key_value_heads, c.num_attention_heads));
  if (find_field(doc, "head_dim")) {
    c.head_dim = positive(doc, "head_dim", where, c.model_type);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(fmt::format("{}: no head_dim, and num_attention_heads {} does not divide hidden_size {}",
                              where, c.num_attention_heads, c.hidden_size));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (const auto eps = read_number(doc, "rms_norm_eps", where)) {
    if (*eps <= 0) throw Error(fmt::format("{}: field 'rms_norm_eps' = {} must be positive", where, *eps));
    c.rms_norm_eps = *eps;
  }
  c.rope_theta = rope_theta(doc, where);
  c.rope_type = rope_type(doc, where);
  if (const auto act = read_string(doc, "hidden_act", where)) c.hidden_act = *act;
  c.tie_word_embeddings = read_bool(doc, "tie_word_embeddings", where).value_or(false);
  c.attention_bias = read_bool(doc, "attention_bias", where).value_or(false);
  if (find_field(doc, "max_position_embeddings"))
    c.max_position_embeddings = positive(doc, "max_position_embeddings", where, c.model_type);
  c.bos_token_id = read_int(doc, "bos_token_id", where);
  c.eos_token_ids = eos_ids(doc, where);
  c.quantization = quantization(doc, where);
  return c;
}

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, std::string_view source) {
  const json doc = parse_json(json_text, source);
  try {
    return parse(doc, source);
  } catch (const json::exception& e) {  // defensive: every access above is type-checked
    throw Error(fmt::format("{}: malformed config: {}", source, e.what()));
  }
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  return parse_model_config(read_text_file(config_json), config_json.string());
}

}  // namespace trellis::format
