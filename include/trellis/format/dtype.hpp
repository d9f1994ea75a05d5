// Element types of safetensors tensors, by their safetensors names
// ("BF16", "U32", ...). Parsing a name never throws: unknown names give
// std::nullopt and the caller reports them with its own context.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace trellis::format {

enum class DType {
  BOOL, U8, I8, F8_E4M3, F8_E5M2,  // 1 byte
  U16, I16, F16, BF16,             // 2 bytes
  U32, I32, F32,                   // 4 bytes
  U64, I64, F64,                   // 8 bytes
};

// The safetensors name of a dtype, e.g. "BF16".
std::string_view dtype_name(DType t);
// Lower-case display name, e.g. "bf16" (what `trellis inspect` prints).
std::string_view dtype_display_name(DType t);
// Bytes per element (1, 2, 4 or 8).
std::size_t dtype_size(DType t);
// The dtype named `name` (exact, case-sensitive, as safetensors writes it).
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace trellis::format
