// QuantReport: what `trellis quantize` did, per coded tensor and in total,
// written as `quant_report.json` next to the model:
//   {"L", "T", "rotation", "threads",
//    "tensors": [{"module", "bits", "axis", "shape": [out, in], "rel_error",
//                 "seconds", "bytes"}],                   // in coding order
//    "totals": {"coded_tensors", "coded_weights", "coded_bytes",
//               "bits_per_weight", "rel_error", "seconds"}}
// rel_error is ‖W − Ŵ‖_F / ‖W‖_F (Ŵ the canonical fp32 decode); the total
// is the same over all coded weights together. bytes count codes, scales
// and signs; bits_per_weight = 8 · coded_bytes / coded_weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trellis::quant {

struct TensorReport {
  std::string module;
  int k = 0;
  int axis = 1;
  int64_t out_features = 0;
  int64_t in_features = 0;
  double rel_error = 0.0;
  double sq_norm = 0.0;  // ‖W‖²_F, for the total
  double seconds = 0.0;
  uint64_t bytes = 0;
};

struct QuantReport {
  int L = 0;
  int T = 0;
  bool rotate = false;
  int threads = 0;
  std::vector<TensorReport> tensors;
  double seconds = 0.0;  // whole run: reading, coding, writing

  int64_t coded_weights() const;
  uint64_t coded_bytes() const;
  double rel_error() const;
  std::string json() const;
};

}  // namespace trellis::quant
