// Per-row scale search around the Viterbi encoder (math and contract in
// quantize_tensor_row.hpp).
#include "quantize_tensor_row.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "trellis/code.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::detail {

namespace {

// c_k for k = 1 … 8: the scale/RMS ratio with the least MSE on iid N(0,1)
// rows (measured with T = 256, L = 12; the optimum is flat, the LS refit
// corrects the rest).
constexpr float kScaleMultiple[8] = {0.87f, 1.04f, 1.10f, 1.13f, 1.15f, 1.20f, 1.20f, 1.20f};

}  // namespace

RowQuantizer::RowQuantizer(int k, int L, int T, int max_overlaps, int scale_passes)
    : enc_(k, L, T, max_overlaps), scale_passes_(std::max(scale_passes, 1)), v_(size_t(T)) {}

double RowQuantizer::error_at(const float* w, int64_t cols, uint16_t scale) const {
  const float f = row_factor(fp16_to_float(scale));
  double e = 0.0;
  for (int64_t i = 0; i < cols; ++i) {
    const double d = double(w[i]) - double(float(code_value(states_[size_t(i)])) * f);
    e += d * d;
  }
  return e;
}

uint16_t RowQuantizer::refit(const float* w, int64_t cols) const {
  double wy = 0.0, yy = 0.0;
  for (int64_t i = 0; i < cols; ++i) {
    const double y = code_value(states_[size_t(i)]);
    wy += double(w[i]) * y;
    yy += y * y;
  }
  const double f = yy > 0.0 ? wy / yy : 0.0;
  return float_to_fp16(float(std::max(f, 0.0) / double(kCodeRcp)));
}

RowResult RowQuantizer::quantize(const float* w, int64_t cols, uint32_t* words) {
  const int T = enc_.T();
  const int wpb = T * enc_.k() / 32;
  const int64_t nwords = cols / T * wpb;
  words_.resize(size_t(nwords));
  states_.resize(size_t(cols));

  double ss = 0.0;
  for (int64_t i = 0; i < cols; ++i) ss += double(w[i]) * double(w[i]);
  const double rms = std::sqrt(ss / double(cols));
  uint16_t scale = float_to_fp16(float(double(kScaleMultiple[enc_.k() - 1]) * rms));
  if (!std::isfinite(fp16_to_float(scale)))
    throw Error("row RMS " + std::to_string(rms) + " is beyond the fp16 scale range (or not finite)");

  RowResult best;
  best.error = ss;  // scale 0, zero codes
  std::fill(words, words + nwords, 0u);
  auto consider = [&](uint16_t s, double e) {
    if (e < best.error) {
      best.error = e;
      best.scale = s;
      std::memcpy(words, words_.data(), size_t(nwords) * sizeof(uint32_t));
    }
  };
  for (int pass = 0; pass < scale_passes_; ++pass) {
    const float f = row_factor(fp16_to_float(scale));
    if (!(f > 0.0f)) break;  // the scale rounds to 0: keep the zero row
    for (int64_t b = 0; b < cols / T; ++b) {
      for (int t = 0; t < T; ++t) v_[size_t(t)] = w[b * T + t] / f;
      enc_.encode_block(v_.data(), words_.data() + b * wpb, states_.data() + b * T);
    }
    consider(scale, error_at(w, cols, scale));
    const uint16_t next = refit(w, cols);
    if (next == scale || !std::isfinite(fp16_to_float(next))) break;
    consider(next, error_at(w, cols, next));
    scale = next;
  }
  return best;
}

}  // namespace trellis::detail
