// Encoding one stored row with its fp16 scale (private to quantize_tensor).
//
// The row's weights w are coded as ŵ_i = float32(y(s_i))·f, f = float32(scale)·RCP,
// with scale an fp16 value. We minimize the row's Σ (w − ŵ)² by alternating:
//   scale_0 = fp16(c_k · rms(w))   c_k: the error-minimizing multiple of the
//                                  RMS for iid Gaussian rows, measured per k for
//                                  the 1MAD code (the code is not Gaussian and
//                                  trellis error is not symmetric in scale);
//   pass p: encode every block with targets w/f_p (Viterbi, optimal codes for
//           f_p), then refit f by least squares on those codes,
//           f* = Σ w·y / Σ y², rounded to fp16 → scale_{p+1}.
// Every (codes, scale) pair met — encoded at f_p, and the same codes with the
// refit scale — is scored with the fp16-rounded scale; the best one is kept.
// Stops after `scale_passes` encodes or when the refit scale stops moving.
// A row of zeros (or one whose scale rounds to 0) gets scale 0 and zero codes.
#pragma once
#include <cstdint>
#include <vector>

#include "trellis/codec/viterbi.hpp"

namespace trellis::detail {

struct RowResult {
  uint16_t scale = 0;  // fp16 bits
  double error = 0.0;  // Σ (w − ŵ)² with ŵ the canonical fp32 decode
};

class RowQuantizer {
 public:
  RowQuantizer(int k, int L, int T, int max_overlaps, int scale_passes);

  // cols a multiple of T; writes cols·k/32 words (the row's blocks in order).
  RowResult quantize(const float* w, int64_t cols, uint32_t* words);

 private:
  // Squared error of the codes in states_ at fp16 scale `scale`.
  double error_at(const float* w, int64_t cols, uint16_t scale) const;
  // fp16 least-squares scale for the codes in states_.
  uint16_t refit(const float* w, int64_t cols) const;

  ViterbiEncoder enc_;
  int scale_passes_;
  std::vector<float> v_;
  std::vector<uint32_t> words_, states_;
};

}  // namespace trellis::detail
