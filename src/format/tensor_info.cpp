// TensorInfo helpers: element count, checked typed views, shape formatting.
#include "trellis/format/tensor_info.hpp"

#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trellis/error.hpp"

namespace trellis::format {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the parser guarantees no overflow
  return n;
}

void TensorInfo::check_view(std::size_t elem_size, std::size_t align) const {
  if (elem_size != dtype_size(dtype))
    throw Error(fmt::format("{}: tensor '{}': dtype {} has {}-byte elements, read as {}-byte", source,
                            name, dtype_name(dtype), dtype_size(dtype), elem_size));
  if (reinterpret_cast<std::uintptr_t>(data.data()) % align != 0)
    throw Error(fmt::format("{}: tensor '{}': data at file offset {} is not {}-byte aligned", source,
                            name, file_offset, align));
}

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace trellis::format
