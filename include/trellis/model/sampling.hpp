// Choosing the next token from fp32 logits, in Hugging Face's order:
//   1. repetition penalty (CTRL): every distinct id among the last
//      repeat_last_n history tokens (0: all of them) has its logit l replaced
//      by l / penalty when l > 0, else l · penalty (penalty 1: off);
//   2. temperature ≤ 0: greedy, the argmax (the lowest id among ties);
//      otherwise the logits are divided by the temperature;
//   3. top-k (k > 0): only the k largest logits stay; softmax over those left
//      gives candidates sorted by probability (descending, ties by id);
//   4. top-p (p < 1): the smallest leading set whose mass reaches p stays;
//   5. min-p (> 0): candidates with probability < min_p · the top one go;
//   every filter keeps at least one candidate and renormalizes;
//   6. a draw u ∈ [0, 1) from a std::mt19937_64 seeded with `seed` (53 bits,
//      the same on every platform) picks the first candidate whose
//      cumulative probability exceeds u.
// Same seed and same logits give the same tokens.
//
// With top-k and no repetition penalty the k largest logits decide steps
// 3–6, so a device may send back a few (top_count of them, the k plus a
// margin for logits that the temperature's division makes equal) instead of
// the row: sample_top(largest_logits(row, top_count)) is sample(row), or
// nullopt (the RNG untouched) where those few do not settle it (a NaN in the
// row, or equal values past the margin); the caller then takes sample(row).
// Steps 3–6 are top_choice.hpp's functions on both paths (its exp, not the
// math library's), so a device that runs them from the largest logits
// (the CUDA choice kernel) draws the same token.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "trellis/model/top_logits.hpp"

namespace trellis::model {

struct SamplingParams {
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  uint64_t seed = 0;
};

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> history, float penalty,
                              int last_n);
int32_t argmax(std::span<const float> logits);
// Steps 2–3 for temperature > 0: logits / temperature, top-k, softmax, sorted.
std::vector<Candidate> top_k_candidates(std::span<const float> logits, float temperature, int top_k);
// The same from the row's largest logits (largest_logits order, no NaN) when
// they settle it: more than top_k of them, the last one's scaled logit below
// the k-th candidate's; else nullopt.
std::optional<std::vector<Candidate>> top_k_candidates(std::span<const TopLogit> largest, float temperature,
                                                       int top_k);
// Without top-k: the first candidates of top_k_candidates(logits, t, 0)
// with their probabilities, enough that keep_top_p then keep_min_p keep
// from them what they keep from the whole list (the sampler's path for
// top-k 0; every candidate when neither filter cuts).
std::vector<Candidate> leading_candidates(std::span<const float> logits, float temperature, float top_p,
                                          float min_p);
void keep_top_p(std::vector<Candidate>& c, float top_p);
void keep_min_p(std::vector<Candidate>& c, float min_p);

// What the choice from the largest logits takes of `params` (top_choice.hpp).
TopChoiceParams top_choice_params(const SamplingParams& params);
// top_choice.hpp's choose_from_top on the host: the token, or kChoiceDeclined.
inline int32_t choose_from_top(std::span<const TopLogit> largest, const TopChoiceParams& params, double u) {
  std::vector<Candidate> work(largest.size());
  return choose_from_top(SerialTeam{}, largest.data(), int(largest.size()), params, u, work.data());
}
// Sampler::sample_top's choice with the draw u given (choose_from_top):
// nothing of a sampler's state but its parameters, so it may run anywhere.
std::optional<int32_t> sample_top(const SamplingParams& params, std::span<const TopLogit> largest, double u);

class Sampler {
 public:
  // Errors (trellis::Error, naming the field and its range): a temperature
  // that is NaN, top_k or repeat_last_n below 0, top_p or min_p outside
  // [0, 1], a repetition penalty that is not a finite number above 0.
  explicit Sampler(const SamplingParams& params);
  // The next token; `logits` is penalized in place. `history` is what the
  // sequence holds so far (prompt and generated tokens).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);
  // True when sample() is argmax(logits) whatever the history: temperature
  // ≤ 0 and no repetition penalty (penalty 1). Generation then lets the
  // backend find the token (Session::forward_argmax).
  bool greedy() const { return params_.temperature <= 0.0f && params_.repeat_penalty == 1.0f; }
  // How many of the largest logits settle sample() over a vocabulary of
  // `vocab`: top_k + kTopMargin, when the temperature is above 0, there is
  // no repetition penalty and 0 < top_k <= kMaxTopK; else 0 (the whole row).
  static constexpr int kTopMargin = 8, kMaxTopK = 56;
  int top_count(int64_t vocab) const;
  // sample(row) from largest_logits(row, top_count(...)), or nullopt where
  // they do not settle it (then the RNG is untouched).
  std::optional<int32_t> sample_top(std::span<const TopLogit> largest);
  // The draw of step 6 that sample() and sample_top() take next, so that a
  // pipelined caller can take the draws in the tokens' order and choose
  // elsewhere (sample() with a draw, below, and model::sample_top);
  // give_back(u) returns the newest draw unused: the next draw is u again.
  double draw();
  void give_back(double u) { given_back_ = u; }
  // sample() with the draw u (const: the RNG untouched).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history, double u) const;
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::optional<double> given_back_;
};

}  // namespace trellis::model
