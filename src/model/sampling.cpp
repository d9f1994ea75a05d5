// Token sampling (contract in trellis/model/sampling.hpp).
#include "trellis/model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace trellis::model {
namespace {

void renormalize(std::vector<Candidate>& c) {
  double total = 0;
  for (const auto& x : c) total += x.prob;
  for (auto& x : c) x.prob = float(x.prob / total);
}

bool before(const Candidate& a, const Candidate& b) { return a.prob != b.prob ? a.prob > b.prob : a.id < b.id; }

}  // namespace

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> history, float penalty, int last_n) {
  if (penalty == 1.0f) return;
  const size_t n = last_n > 0 ? std::min(history.size(), size_t(last_n)) : history.size();
  std::unordered_set<int32_t> seen;
  for (const int32_t id : history.last(n)) {
    if (id < 0 || size_t(id) >= logits.size() || !seen.insert(id).second) continue;
    float& l = logits[size_t(id)];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

int32_t argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<Candidate> top_k_candidates(std::span<const float> logits, float temperature, int top_k) {
  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < c.size(); ++i) c[i] = {int32_t(i), logits[i] / temperature};  // prob holds the logit
  auto keep = c.end();
  if (top_k > 0 && size_t(top_k) < c.size()) {
    keep = c.begin() + top_k;
    std::nth_element(c.begin(), keep - 1, c.end(), before);
  }
  c.erase(keep, c.end());
  std::sort(c.begin(), c.end(), before);
  const float top = c.front().prob;
  for (auto& x : c) x.prob = std::exp(x.prob - top);
  renormalize(c);
  return c;
}

void keep_top_p(std::vector<Candidate>& c, float top_p) {
  if (top_p >= 1.0f) return;
  double mass = 0;
  size_t n = 0;
  while (n < c.size() && (n == 0 || mass < top_p)) mass += c[n++].prob;
  c.resize(n);
  renormalize(c);
}

void keep_min_p(std::vector<Candidate>& c, float min_p) {
  if (min_p <= 0.0f) return;
  const float floor = min_p * c.front().prob;
  c.erase(std::remove_if(c.begin() + 1, c.end(), [floor](const Candidate& x) { return x.prob < floor; }), c.end());
  renormalize(c);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  apply_repetition_penalty(logits, history, params_.repeat_penalty, params_.repeat_last_n);
  if (params_.temperature <= 0.0f) return argmax(logits);
  std::vector<Candidate> c = top_k_candidates(logits, params_.temperature, params_.top_k);
  keep_top_p(c, params_.top_p);
  keep_min_p(c, params_.min_p);
  const double u = double(rng_() >> 11) * 0x1.0p-53;
  double cumulative = 0;
  for (const auto& x : c)
    if ((cumulative += x.prob) > u) return x.id;
  return c.back().id;
}

}  // namespace trellis::model
