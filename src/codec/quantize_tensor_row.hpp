// The fp16 scale search of one stored row (private to quantize_tensor),
// driven by any block encoder (the CPU Viterbi encoder or a BlockBatchEncoder).
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
//
// The caller runs the encodes:
//   RowScaleSearch s(w, cols, k, T, scale_passes, words);
//   while (s.factor() > 0) {
//     s.targets(v);                       // v = w / f
//     encode v block by block → states (cols), packed (cols·k/32 words);
//     s.encoded(states, packed);
//   }
//   s.result();                           // scale, error; the best codes are in words
#pragma once
#include <cstdint>

namespace trellis::detail {

struct RowResult {
  uint16_t scale = 0;  // fp16 bits
  double error = 0.0;  // Σ (w − ŵ)² with ŵ the canonical fp32 decode
};

class RowScaleSearch {
 public:
  // w: cols weights (borrowed; cols a multiple of T); words: the row's
  // cols·k/32 output words, zeroed here and holding the best codes met.
  // Throws trellis::Error when the row's starting scale is not a finite fp16.
  RowScaleSearch(const float* w, int64_t cols, int k, int T, int scale_passes, uint32_t* words);

  // The row factor f of the next encode, or 0 when the search is over.
  float factor() const;
  // v[i] = w[i] / factor() for the cols weights.
  void targets(float* v) const;
  // The encode of targets(): cols states and cols·k/32 packed words.
  void encoded(const uint32_t* states, const uint32_t* packed);
  RowResult result() const { return best_; }

 private:
  // Squared error of the codes `states` at fp16 scale `scale`.
  double error_at(const uint32_t* states, uint16_t scale) const;
  // fp16 least-squares scale for the codes `states`.
  uint16_t refit(const uint32_t* states) const;
  void consider(uint16_t scale, double error, const uint32_t* packed);

  const float* w_;
  int64_t cols_, nwords_;
  int passes_, pass_ = 0;
  bool done_ = false;
  uint16_t scale_;
  uint32_t* words_;
  RowResult best_;
};

}  // namespace trellis::detail
