// safetensors writer: validate, lay out, write header + data atomically.
#include "trellis/format/safetensors_writer.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trellis/error.hpp"
#include "trellis/format/atomic_file.hpp"
#include "trellis/format/tensor_info.hpp"

namespace trellis::format {
namespace {

void check_tensor(const TensorToWrite& t, const std::filesystem::path& path) {
  const std::string where = fmt::format("{}: writing tensor '{}'", path.string(), t.name);
  if (t.name.empty() || t.name == "__metadata__")
    throw Error(fmt::format("{}: the name is empty or reserved", where));
  uint64_t bytes = dtype_size(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0) throw Error(fmt::format("{}: negative dimension in shape {}", where, shape_string(t.shape)));
    if (__builtin_mul_overflow(bytes, uint64_t(d), &bytes))
      throw Error(fmt::format("{}: shape {} overflows 64-bit byte counts", where, shape_string(t.shape)));
  }
  if (bytes != t.data.size())
    throw Error(fmt::format("{}: data is {} bytes, dtype {} shape {} needs {}", where, t.data.size(),
                            dtype_name(t.dtype), shape_string(t.shape), bytes));
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> order;
  std::set<std::string_view> names;
  for (const auto& t : tensors) {
    check_tensor(t, path);
    if (!names.insert(t.name).second)
      throw Error(fmt::format("{}: writing tensor '{}': duplicate name", path.string(), t.name));
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
    const auto sa = dtype_size(a->dtype), sb = dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite* t : order) {
    header[t->name] = {{"dtype", dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');

  std::byte len[8];
  for (int i = 0; i < 8; ++i) len[i] = std::byte((uint64_t(text.size()) >> (8 * i)) & 0xff);
  AtomicFile out(path);
  out.write(len);
  out.write(text);
  for (const TensorToWrite* t : order) out.write(t->data);
  out.commit();
}

void write_safetensors_index(const std::filesystem::path& path,
                             const std::map<std::string, std::string>& weight_map,
                             uint64_t total_size) {
  const nlohmann::json doc = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  write_file_atomic(path, doc.dump(2) + "\n");
}

}  // namespace trellis::format
