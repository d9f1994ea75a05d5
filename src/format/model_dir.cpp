// ModelDir: config + tensors + checked trellis layers of a model directory.
#include "trellis/format/model_dir.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "trellis/error.hpp"

namespace trellis::format {
namespace {

// "a.b.scales" -> module "a.b" when the name ends with `suffix`.
std::optional<std::string_view> module_of(std::string_view name, std::string_view suffix) {
  if (name.size() > suffix.size() && name.ends_with(suffix)) return name.substr(0, name.size() - suffix.size());
  return std::nullopt;
}

const std::filesystem::path& existing_dir(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(fmt::format("{}: not a model directory", dir.string()));
  return dir;
}

}  // namespace

ModelDir::ModelDir(const std::filesystem::path& dir)
    : path_(existing_dir(dir)),
      config_(load_model_config(dir / "config.json")),
      store_(TensorStore::open_dir(dir)) {
  const std::string config_name = (dir / "config.json").string();
  for (const auto& [module, params] : config_.quantization.modules) {
    const TensorInfo* weight = store_.find(module + ".weight");
    const TensorInfo* scales = store_.find(module + ".scales");
    if (!weight || !scales)
      throw Error(fmt::format("{}: quantization entry '{}': no tensor '{}.{}' in {}", config_name, module,
                              module, weight ? "scales" : "weight", store_.origin().string()));
    trellis_.push_back(check_trellis_tensor(module, params, *weight, *scales, store_.find(module + ".signs")));
  }
  for (const TensorInfo* t : store_.tensors())
    for (std::string_view suffix : {".scales", ".signs"})
      if (const auto m = module_of(t->name, suffix); m && !config_.quantization.find(*m))
        throw Error(fmt::format("{}: tensor '{}' has no quantization entry '{}' in {}", t->source, t->name,
                                *m, config_name));
}

const TrellisTensor* ModelDir::find_trellis(std::string_view module) const {
  const auto it = std::lower_bound(trellis_.begin(), trellis_.end(), module,
                                   [](const TrellisTensor& t, std::string_view m) { return t.module < m; });
  return it != trellis_.end() && it->module == module ? &*it : nullptr;
}

std::vector<ManifestEntry> ModelDir::manifest() const {
  std::vector<ManifestEntry> out;
  for (const TensorInfo* t : store_.tensors()) {
    // A trellis layer's scales and signs are counted with its weight (the
    // constructor made sure every such tensor belongs to a layer).
    if (module_of(t->name, ".scales") || module_of(t->name, ".signs")) continue;
    const auto m = module_of(t->name, ".weight");
    const TrellisTensor* tt = m ? find_trellis(*m) : nullptr;
    ManifestEntry e;
    e.name = t->name;
    if (tt) {
      e.trellis = tt;
      e.shape = {tt->geom.out_features, tt->geom.in_features};
      e.parameters = tt->geom.out_features * tt->geom.in_features;
      e.bytes = tt->bytes();
    } else {
      e.tensor = t;
      e.shape = t->shape;
      e.parameters = t->numel();
      e.bytes = t->data.size();
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace trellis::format
