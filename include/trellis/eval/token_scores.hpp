// Scores of one prediction, from rows of V log-probabilities.
//
//   log_softmax(z)_j = z_j − lse(z),  lse(z) = m + log Σ_j exp(z_j − m),  m = max_j z_j
//                      (sums and logs in double, the result rounded to fp32)
//   nll               = −q_target                     q = the model's log-probs
//   kld               = Σ_j exp(r_j) (r_j − q_j)      r = the reference's log-probs:
//                                                     KL(P_ref ‖ P_model) in nats, ≥ 0 up to
//                                                     rounding and exactly 0 when q == r
//   same_top          = argmax_j r_j == argmax_j q_j  (the first index on ties)
#pragma once
#include <cstdint>
#include <span>

namespace trellis::eval {

// out = log_softmax(logits); out may be logits' memory.
void log_softmax(std::span<const float> logits, std::span<float> out);

struct TokenComparison {
  double nll = 0;
  double ref_nll = 0;
  double kld = 0;
  bool same_top = false;
};

TokenComparison compare_token(std::span<const float> log_probs, std::span<const float> ref_log_probs, int32_t target);

}  // namespace trellis::eval
