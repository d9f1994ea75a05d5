// QuantReport totals and JSON (contract in include/trellis/quant/quant_report.hpp).
#include "trellis/quant/quant_report.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace trellis::quant {

int64_t QuantReport::coded_weights() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.out_features * t.in_features;
  return n;
}

uint64_t QuantReport::coded_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.bytes;
  return n;
}

double QuantReport::rel_error() const {
  double err = 0.0, norm = 0.0;
  for (const auto& t : tensors) {
    err += t.rel_error * t.rel_error * t.sq_norm;
    norm += t.sq_norm;
  }
  return norm > 0.0 ? std::sqrt(err / norm) : 0.0;
}

std::string QuantReport::json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tensors)
    list.push_back({{"module", t.module},
                    {"bits", t.k},
                    {"axis", t.axis},
                    {"shape", {t.out_features, t.in_features}},
                    {"rel_error", t.rel_error},
                    {"seconds", t.seconds},
                    {"bytes", t.bytes}});
  const int64_t weights = coded_weights();
  const nlohmann::json doc = {
      {"L", L},
      {"T", T},
      {"rotation", rotate ? "hadamard" : "none"},
      {"threads", threads},
      {"tensors", list},
      {"totals",
       {{"coded_tensors", tensors.size()},
        {"coded_weights", weights},
        {"coded_bytes", coded_bytes()},
        {"bits_per_weight", weights ? 8.0 * double(coded_bytes()) / double(weights) : 0.0},
        {"rel_error", rel_error()},
        {"seconds", seconds}}}};
  return doc.dump(2) + "\n";
}

}  // namespace trellis::quant
