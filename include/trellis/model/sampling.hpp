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
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

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

struct Candidate {
  int32_t id;
  float prob;
};

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> history, float penalty,
                              int last_n);
int32_t argmax(std::span<const float> logits);
// Steps 2–3 for temperature > 0: logits / temperature, top-k, softmax, sorted.
std::vector<Candidate> top_k_candidates(std::span<const float> logits, float temperature, int top_k);
// Without top-k: the first candidates of top_k_candidates(logits, t, 0)
// with their probabilities, enough that keep_top_p then keep_min_p keep
// from them what they keep from the whole list (the sampler's path for
// top-k 0; every candidate when neither filter cuts).
std::vector<Candidate> leading_candidates(std::span<const float> logits, float temperature, float top_p,
                                          float min_p);
void keep_top_p(std::vector<Candidate>& c, float top_p);
void keep_min_p(std::vector<Candidate>& c, float min_p);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}
  // The next token; `logits` is penalized in place. `history` is what the
  // sequence holds so far (prompt and generated tokens).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);
  // True when sample() is argmax(logits) whatever the history: temperature
  // ≤ 0 and no repetition penalty (penalty 1). Generation then lets the
  // backend find the token (Session::forward_argmax).
  bool greedy() const { return params_.temperature <= 0.0f && params_.repeat_penalty == 1.0f; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

}  // namespace trellis::model
