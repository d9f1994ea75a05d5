// TensorStore: single-file and sharded (index.json) tensor lookup.
#include "trellis/format/tensor_store.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "json_fields.hpp"
#include "trellis/error.hpp"

namespace trellis::format {
namespace {

bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

TensorStore TensorStore::open_dir(const std::filesystem::path& dir) {
  const auto index = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(index)) return open_index(index);
  const auto single = dir / "model.safetensors";
  if (std::filesystem::exists(single)) return open_file(single);
  throw Error(fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir.string()));
}

TensorStore TensorStore::open_file(const std::filesystem::path& file) {
  TensorStore store(file);
  store.files_.emplace_back(file);
  store.index_tensors();
  return store;
}

TensorStore TensorStore::open_index(const std::filesystem::path& index) {
  const std::string where = index.string();
  const auto doc = detail::parse_json(detail::read_text_file(index), where);
  if (!doc.is_object()) throw Error(fmt::format("{}: must be a JSON object", where));
  const auto* weight_map = detail::find_field(doc, "weight_map");
  if (!weight_map || !weight_map->is_object())
    throw Error(fmt::format("{}: 'weight_map' must be an object of tensor -> shard file", where));

  TensorStore store(index);
  std::map<std::string, std::size_t> shard_of_name;  // shard file name -> files_ index
  std::map<std::string, std::string, std::less<>> listed;  // tensor -> shard file name
  for (const auto& [tensor, shard] : weight_map->items()) {
    if (!shard.is_string() || !plain_file_name(shard.get<std::string>()))
      throw Error(fmt::format("{}: weight_map '{}': shard must be a file name in the index's "
                              "directory, got {}",
                              where, tensor, detail::excerpt(shard)));
    const std::string file = shard.get<std::string>();
    listed.emplace(tensor, file);
    if (!shard_of_name.count(file)) {
      shard_of_name.emplace(file, store.files_.size());
      store.files_.emplace_back(index.parent_path() / file);
    }
  }
  for (const auto& [tensor, file] : listed)
    if (!store.files_[shard_of_name.at(file)].find(tensor))
      throw Error(fmt::format("{}: weight_map lists tensor '{}' in shard '{}', which does not hold it",
                              where, tensor, file));
  for (const auto& [file, i] : shard_of_name)
    for (const auto& t : store.files_[i].tensors()) {
      const auto it = listed.find(t.name);
      if (it == listed.end())
        throw Error(fmt::format("{}: shard '{}' holds tensor '{}', which weight_map does not list",
                                where, file, t.name));
      if (it->second != file)
        throw Error(fmt::format("{}: shard '{}' holds tensor '{}', which weight_map puts in '{}'",
                                where, file, t.name, it->second));
    }
  store.index_tensors();
  return store;
}

void TensorStore::index_tensors() {
  sorted_.clear();
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) sorted_.push_back(&t);
  std::sort(sorted_.begin(), sorted_.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; });
}

const TensorInfo* TensorStore::find(std::string_view name) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), name,
                                   [](const TensorInfo* t, std::string_view n) { return t->name < n; });
  return it != sorted_.end() && (*it)->name == name ? *it : nullptr;
}

const TensorInfo& TensorStore::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(fmt::format("{}: no tensor '{}'", origin_.string(), name));
}

}  // namespace trellis::format
