// The safetensors dtype table: names and element sizes.
#include "trellis/format/dtype.hpp"

#include <array>

namespace trellis::format {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  std::string_view display;
  std::size_t size;
};

constexpr std::array<DTypeRow, 15> kTable{{
    {DType::BOOL, "BOOL", "bool", 1},
    {DType::U8, "U8", "u8", 1},
    {DType::I8, "I8", "i8", 1},
    {DType::F8_E4M3, "F8_E4M3", "f8_e4m3", 1},
    {DType::F8_E5M2, "F8_E5M2", "f8_e5m2", 1},
    {DType::U16, "U16", "u16", 2},
    {DType::I16, "I16", "i16", 2},
    {DType::F16, "F16", "f16", 2},
    {DType::BF16, "BF16", "bf16", 2},
    {DType::U32, "U32", "u32", 4},
    {DType::I32, "I32", "i32", 4},
    {DType::F32, "F32", "f32", 4},
    {DType::U64, "U64", "u64", 8},
    {DType::I64, "I64", "i64", 8},
    {DType::F64, "F64", "f64", 8},
}};

const DTypeRow& row(DType t) {
  for (const auto& r : kTable)
    if (r.type == t) return r;
  return kTable[0];  // unreachable: every enumerator has a row
}

}  // namespace

std::string_view dtype_name(DType t) { return row(t).name; }
std::string_view dtype_display_name(DType t) { return row(t).display; }
std::size_t dtype_size(DType t) { return row(t).size; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& r : kTable)
    if (r.name == name) return r.type;
  return std::nullopt;
}

}  // namespace trellis::format
