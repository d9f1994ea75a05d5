// `trellis inspect DIR [--json]`: what a model directory holds. One row per
// logical tensor (name; dtype, or the trellis coding; shape — [out, in] for
// trellis layers; bytes, a trellis layer's scales/signs included), then the
// totals: tensors, parameters (out·in for trellis layers), bytes, a line per
// type, and the average bits per weight over the coded layers (all of their
// bytes — codes, scales, signs — over their parameters).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "trellis/format/model_dir.hpp"
#include "verbs.hpp"

namespace trellis::cli {
namespace {

using format::ManifestEntry;
using format::ModelDir;

struct Tally {
  int64_t tensors = 0;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  void add(const ManifestEntry& e) {
    ++tensors;
    parameters += e.parameters;
    bytes += e.bytes;
  }
};

std::string type_of(const ManifestEntry& e) {
  if (!e.trellis) return std::string(format::dtype_display_name(e.tensor->dtype));
  const auto& g = e.trellis->geom;
  return fmt::format("trellis k={} L={} T={} axis={}{}{}", g.k, g.L, g.T, g.axis,
                     g.block_interleave == 2 ? " k3-interleaved" : "",
                     e.trellis->params.rotation == format::Rotation::hadamard ? " hadamard" : "");
}

// Groups for the per-type totals: the dtype, or "trellis k=N".
std::string group_of(const ManifestEntry& e) {
  return e.trellis ? fmt::format("trellis k={}", e.trellis->geom.k) : type_of(e);
}

double bits_per_weight(const Tally& t) { return t.parameters ? 8.0 * double(t.bytes) / double(t.parameters) : 0.0; }

void print_table(const ModelDir& dir, const std::vector<ManifestEntry>& rows) {
  const auto& c = dir.config();
  fmt::print("model   {} ({}{})\n", dir.path().string(), c.model_type,
             c.architectures.empty() ? "" : fmt::format(", {}", fmt::join(c.architectures, ", ")));
  fmt::print("config  hidden {}, intermediate {}, layers {}, heads {}/{} (head_dim {}), vocab {}, "
             "rope_theta {}, tied embeddings {}\n\n",
             c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
             c.num_key_value_heads, c.head_dim, c.vocab_size, c.rope_theta,
             c.tie_word_embeddings ? "yes" : "no");

  std::size_t wn = 4, wt = 4, ws = 5;
  for (const auto& e : rows) {
    wn = std::max(wn, e.name.size());
    wt = std::max(wt, type_of(e).size());
    ws = std::max(ws, format::shape_string(e.shape).size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", "name", wn, "type", wt, "shape", ws, "bytes");
  Tally all, coded;
  std::map<std::string, Tally> by_group;
  for (const auto& e : rows) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", e.name, wn, type_of(e), wt, format::shape_string(e.shape), ws,
               e.bytes);
    all.add(e);
    by_group[group_of(e)].add(e);
    if (e.trellis) coded.add(e);
  }
  fmt::print("\ntensors     {}\nparameters  {}\nbytes       {} ({:.1f} MiB)\n", all.tensors, all.parameters,
             all.bytes, double(all.bytes) / (1 << 20));
  for (const auto& [group, t] : by_group)
    fmt::print("  {:<14} {} tensors, {} parameters, {} bytes\n", group, t.tensors, t.parameters, t.bytes);
  if (coded.tensors)
    fmt::print("coded       {} tensors, {} parameters, {:.3f} bits per weight (codes + scales)\n", coded.tensors,
               coded.parameters, bits_per_weight(coded));
  else
    fmt::print("coded       none (no trellis tensors)\n");
}

nlohmann::json tally_json(const Tally& t) {
  return {{"tensors", t.tensors}, {"parameters", t.parameters}, {"bytes", t.bytes}};
}

void print_json(const ModelDir& dir, const std::vector<ManifestEntry>& rows) {
  const auto& c = dir.config();
  nlohmann::json tensors = nlohmann::json::array();
  Tally all, coded;
  std::map<std::string, Tally> by_group;
  for (const auto& e : rows) {
    nlohmann::json t = {{"name", e.name}, {"shape", e.shape}, {"parameters", e.parameters}, {"bytes", e.bytes}};
    if (e.trellis) {
      const auto& g = e.trellis->geom;
      t["type"] = "trellis";
      t["trellis"] = {{"k", g.k},
                      {"L", g.L},
                      {"T", g.T},
                      {"axis", g.axis},
                      {"rows", g.rows},
                      {"cols", g.cols},
                      {"in_features", g.in_features},
                      {"out_features", g.out_features},
                      {"block_interleave", g.block_interleave},
                      {"rotation", e.trellis->params.rotation == format::Rotation::hadamard ? "hadamard" : "none"}};
      coded.add(e);
    } else {
      t["type"] = type_of(e);
    }
    all.add(e);
    by_group[group_of(e)].add(e);
    tensors.push_back(std::move(t));
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [group, t] : by_group) groups[group] = tally_json(t);
  nlohmann::json coded_json = tally_json(coded);
  coded_json["bits_per_weight"] = bits_per_weight(coded);
  nlohmann::json totals = tally_json(all);
  totals["by_type"] = groups;
  totals["coded"] = coded_json;
  const nlohmann::json doc = {
      {"path", dir.path().string()},
      {"config",
       {{"model_type", c.model_type},
        {"architectures", c.architectures},
        {"hidden_size", c.hidden_size},
        {"intermediate_size", c.intermediate_size},
        {"num_hidden_layers", c.num_hidden_layers},
        {"num_attention_heads", c.num_attention_heads},
        {"num_key_value_heads", c.num_key_value_heads},
        {"head_dim", c.head_dim},
        {"vocab_size", c.vocab_size},
        {"rms_norm_eps", c.rms_norm_eps},
        {"rope_theta", c.rope_theta},
        {"tie_word_embeddings", c.tie_word_embeddings}}},
      {"tensors", tensors},
      {"totals", totals}};
  fmt::print("{}\n", doc.dump(2));
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "show a model directory's tensors, geometry, bytes and bits per weight");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("dir", *dir, "model directory (config.json + safetensors)")->required();
  cmd->add_flag("--json", *json, "print JSON instead of a table");
  cmd->callback([dir, json] {
    const ModelDir model(*dir);
    const auto rows = model.manifest();
    if (*json)
      print_json(model, rows);
    else
      print_table(model, rows);
  });
}

}  // namespace trellis::cli
