// Progress of `trellis quantize` on stderr. On a terminal: one bar redrawn
// in place (at most 10 times a second) with the share of coded weights done,
// the module being coded and the ETA (elapsed time scaled by the weights
// left). Otherwise: one plain line per finished module with its bits, axis,
// shape, relative error and seconds.
#pragma once
#include <chrono>
#include <cstdint>

#include "trellis/quant/quantize_model.hpp"

namespace trellis::cli {

class QuantizeProgress {
 public:
  QuantizeProgress(int64_t total_weights, size_t modules, bool terminal);

  void rows(const quant::CodedModule& m, int64_t done, int64_t total);
  void tensor(const quant::TensorReport& r);
  // Ends the bar's line (a terminal only).
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void draw(const quant::CodedModule& m, int64_t weights_done);

  int64_t total_weights_;
  size_t modules_;
  bool terminal_;
  size_t finished_ = 0;
  int64_t finished_weights_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace trellis::cli
