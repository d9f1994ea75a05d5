// The output config.json: the input's JSON object (text `original`, named
// `source` in messages) with a "quantization" object holding one SPEC §1
// entry per coded module:
//   {"mode": "trellis", "bits": k, "group_size": T,
//    "trellis": {"L": L, "code": "1mad", "axis": a}[, "rotation": "hadamard"]}
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "trellis/quant/quant_plan.hpp"

namespace trellis::quant::detail {

std::string quantized_config_json(std::string_view original, const std::string& source, const QuantPlan& plan);

}  // namespace trellis::quant::detail
