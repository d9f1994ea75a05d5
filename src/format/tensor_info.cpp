// TensorInfo helpers: element count, widening to fp32, checked typed views,
// shape formatting.
#include "trellis/format/tensor_info.hpp"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::format {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the parser guarantees no overflow
  return n;
}

void TensorInfo::require_float(const char* what) const {
  if (dtype != DType::BF16 && dtype != DType::F16 && dtype != DType::F32)
    throw Error(fmt::format("{}: tensor '{}': dtype {} is not supported for {} (bf16, fp16 or fp32)", source, name,
                            dtype_display_name(dtype), what));
}

std::vector<float> TensorInfo::to_f32(const char* what) const {
  require_float(what);
  std::vector<float> out(static_cast<size_t>(numel()));
  const std::byte* p = data.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = dtype == DType::F16 ? fp16_to_float(h) : bf16_to_float(h);
    }
  }
  return out;
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
