// Per-prediction scores (math in trellis/eval/token_scores.hpp).
#include "trellis/eval/token_scores.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>

namespace trellis::eval {

void log_softmax(std::span<const float> logits, std::span<float> out) {
  const double m = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float z : logits) sum += std::exp(double(z) - m);
  const double lse = m + std::log(sum);
  for (std::size_t j = 0; j < logits.size(); ++j) out[j] = float(double(logits[j]) - lse);
}

TokenComparison compare_token(std::span<const float> log_probs, std::span<const float> ref_log_probs,
                              int32_t target) {
  double kld = 0;
  for (std::size_t j = 0; j < ref_log_probs.size(); ++j) {
    const double r = ref_log_probs[j], p = std::exp(r);
    if (p > 0) kld += p * (r - double(log_probs[j]));  // 0 · log 0 = 0
  }
  const auto top = [](std::span<const float> v) { return std::distance(v.begin(), std::max_element(v.begin(), v.end())); };
  return {.nll = -double(log_probs[target]),
          .ref_nll = -double(ref_log_probs[target]),
          .kld = kld,
          .same_top = top(log_probs) == top(ref_log_probs)};
}

}  // namespace trellis::eval
