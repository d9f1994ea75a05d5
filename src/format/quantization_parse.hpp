// Internal: parsing config.json's "quantization" object (rules in
// trellis/format/quantization.hpp). `where` names the file and key.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/format/quantization.hpp"

namespace trellis::format::detail {

QuantizationConfig parse_quantization(const nlohmann::json& obj, std::string_view where);

}  // namespace trellis::format::detail
