// quantized_config_json (contract in quantized_config.hpp).
#include "quantized_config.hpp"

#include <nlohmann/json.hpp>

#include "trellis/error.hpp"

namespace trellis::quant::detail {

std::string quantized_config_json(std::string_view original, const std::string& source, const QuantPlan& plan) {
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(original);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
  nlohmann::ordered_json q = nlohmann::ordered_json::object();
  for (const auto& m : plan.coded) {
    nlohmann::ordered_json entry = {{"mode", "trellis"},
                                    {"bits", m.k},
                                    {"group_size", plan.T},
                                    {"trellis", {{"L", plan.L}, {"code", "1mad"}, {"axis", m.axis}}}};
    if (plan.rotate) entry["rotation"] = "hadamard";
    q[m.module] = std::move(entry);
  }
  config["quantization"] = std::move(q);
  return config.dump(2) + "\n";
}

}  // namespace trellis::quant::detail
