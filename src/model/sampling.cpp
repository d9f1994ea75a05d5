// Token sampling (contract in trellis/model/sampling.hpp).
#include "trellis/model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "trellis/error.hpp"

namespace trellis::model {
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

// std::max_element's answer (the first of the largest; a NaN never replaces a
// value, and a NaN in front stays), found faster by visit_above: only a block
// whose largest beats the best so far is scanned element by element. On a
// 151936-entry vocabulary that took 24.4 µs against std::max_element's 110 µs
// on a 2-core AMD EPYC (cpu_sampling_bench, then named cpu_argmax_bench:
// bench/results/cpu_argmax.json). Greedy decoding pays it once per token,
// between the GPU's forwards.
int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) return 0;
  float best = logits[0];
  size_t at = 0;
  visit_above(
      logits, 1, [&] { return best; },
      [&](size_t i) {
        if (best < logits[i]) best = logits[i], at = i;
      });
  return int32_t(at);
}

namespace {

// first_scaled (top_logits.hpp) by temperature, as candidates: prob holds
// the scaled logit, candidate_before is their order.
std::vector<Candidate> first_k(std::span<const float> logits, float temperature, size_t k) {
  std::vector<Candidate> c;
  c.reserve(k);
  for (const TopLogit& x : first_scaled(logits, temperature, k)) c.push_back({x.id, x.logit});
  return c;
}

// Every (id, logit / temperature) in candidate_before order, by a least-significant-
// digit radix sort (16-bit digits) of 64-bit keys: the scaled logit's bits
// mapped so that a larger value gives a smaller key (−0 taken as +0, which
// candidate_before does not tell apart; a NaN after every number), then the id. That
// is std::sort's order under candidate_before; on a 151936-entry vocabulary
// top_k_candidates without top-k took 4.7 ms with it, where std::sort of the
// candidates alone took 12.6 ms (bench/results/cpu_sampling.json). A digit
// every key shares is skipped. Below 4096 candidates std::sort under
// candidate_before (the radix sort's four passes over 2^16 counts cost more there).
std::vector<Candidate> all_sorted(std::span<const float> logits, float temperature) {
  const size_t n = logits.size();
  if (n < 4096) {
    std::vector<Candidate> c(n);
    for (size_t i = 0; i < n; ++i) c[i] = {int32_t(i), logits[i] / temperature};
    std::sort(c.begin(), c.end(), candidate_before);
    return c;
  }
  std::vector<uint64_t> keys(n), spare(n);
  for (size_t i = 0; i < n; ++i) {
    float v = logits[i] / temperature;
    if (v == 0.0f) v = 0.0f;
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    u = std::isnan(v) ? 0u : (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with the value
    keys[i] = uint64_t(~u) << 32 | uint32_t(i);
  }
  std::vector<uint32_t> count(size_t(1) << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0u);
    for (const uint64_t k : keys) ++count[(k >> shift) & 0xffff];
    if (count[(keys[0] >> shift) & 0xffff] == n) continue;
    uint32_t sum = 0;
    for (uint32_t& c : count) sum += std::exchange(c, sum);
    for (const uint64_t k : keys) spare[count[(k >> shift) & 0xffff]++] = k;
    keys.swap(spare);
  }
  std::vector<Candidate> c(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = uint32_t(keys[i]);
    c[i] = {int32_t(id), logits[id] / temperature};
  }
  return c;
}

}  // namespace

std::vector<Candidate> top_k_candidates(std::span<const float> logits, float temperature, int top_k) {
  std::vector<Candidate> c;
  if (top_k > 0 && size_t(top_k) < logits.size()) {
    c = first_k(logits, temperature, size_t(top_k));
    std::sort(c.begin(), c.end(), candidate_before);
  } else {
    c = all_sorted(logits, temperature);
  }
  if (!c.empty()) to_probabilities(SerialTeam{}, c.data(), int(c.size()));
  return c;
}

std::optional<std::vector<Candidate>> top_k_candidates(std::span<const TopLogit> largest, float temperature,
                                                       int top_k) {
  std::vector<Candidate> c(largest.size());
  const int n = top_candidates(SerialTeam{}, largest.data(), int(largest.size()), temperature, top_k, c.data());
  if (n == 0) return std::nullopt;
  c.resize(size_t(n));
  to_probabilities(SerialTeam{}, c.data(), n);
  return c;
}

// Without top-k, where top-p or min-p will cut: the leading candidates, each
// probability over every logit (exp(x − top) / Σ every exp, the sum in id
// order), first_k's for k = 64, 256, … until the list reaches the point
// where keep_top_p stops (its mass ≥ top_p) or where keep_min_p cuts (its
// last below min_p · the first): the filters then keep what they keep of the
// whole sorted list. Past a quarter of the vocabulary, or with a total that
// is not finite (an infinite or NaN logit), every candidate
// (top_k_candidates without top-k). On a 151936-entry vocabulary at top-p
// 0.95, min-p 0.05, with the filters: 553 µs against 4367 µs for every
// candidate sorted (2-core machine, bench/results/cpu_sampling.json); most
// of it is the sum of every exp.
std::vector<Candidate> leading_candidates(std::span<const float> logits, float temperature, float top_p,
                                          float min_p) {
  const size_t n = logits.size();
  if (n == 0 || (top_p >= 1.0f && min_p <= 0.0f)) return top_k_candidates(logits, temperature, 0);
  const float top = logits[size_t(argmax(logits))] / temperature;
  double total = 0;
  for (const float l : logits) total += std::exp(l / temperature - top);
  if (!std::isfinite(total)) return top_k_candidates(logits, temperature, 0);
  for (size_t k = 64; 4 * k < n; k *= 4) {
    std::vector<Candidate> c = first_k(logits, temperature, k);
    std::sort(c.begin(), c.end(), candidate_before);
    double mass = 0;
    for (auto& x : c) mass += (x.prob = float(std::exp(x.prob - top) / total));
    if ((top_p < 1.0f && mass >= top_p) || (min_p > 0.0f && c.back().prob < min_p * c.front().prob)) return c;
  }
  return top_k_candidates(logits, temperature, 0);
}

void keep_top_p(std::vector<Candidate>& c, float top_p) {
  c.resize(size_t(keep_top_p(SerialTeam{}, c.data(), int(c.size()), top_p)));
}

void keep_min_p(std::vector<Candidate>& c, float min_p) {
  c.resize(size_t(keep_min_p(SerialTeam{}, c.data(), int(c.size()), min_p)));
}

namespace {

// Temperature above 0, no repetition penalty, 0 < top_k <= kMaxTopK.
bool top_k_decides(const SamplingParams& p) {
  return p.temperature > 0.0f && p.repeat_penalty == 1.0f && p.top_k > 0 && p.top_k <= Sampler::kMaxTopK;
}

// Steps 4–6 on the candidates of step 3, with the draw u.
int32_t pick(const SamplingParams& p, std::vector<Candidate> c, double u) {
  int n = keep_top_p(SerialTeam{}, c.data(), int(c.size()), p.top_p);
  n = keep_min_p(SerialTeam{}, c.data(), n, p.min_p);
  return pick_candidate(c.data(), n, u);
}

}  // namespace

TopChoiceParams top_choice_params(const SamplingParams& p) { return {p.temperature, p.top_k, p.top_p, p.min_p}; }

std::optional<int32_t> sample_top(const SamplingParams& params, std::span<const TopLogit> largest, double u) {
  if (!top_k_decides(params)) return std::nullopt;
  const int32_t id = choose_from_top(largest, top_choice_params(params), u);
  if (id == kChoiceDeclined) return std::nullopt;
  return id;
}

namespace {

void check_sampling(const SamplingParams& p) {
  const auto reject = [](const char* field, const std::string& rule, double got) {
    throw Error(fmt::format("sampling: {} must be {}, got {}", field, rule, got));
  };
  if (std::isnan(p.temperature)) reject("temperature", "a number (0 or below: greedy)", p.temperature);
  if (p.top_k < 0) reject("top_k", "0 (off) or more", p.top_k);
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) reject("top_p", "in [0, 1] (1: off)", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) reject("min_p", "in [0, 1] (0: off)", p.min_p);
  if (!(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty)))
    reject("repeat_penalty", "a finite number above 0 (1: off)", p.repeat_penalty);
  if (p.repeat_last_n < 0) reject("repeat_last_n", "0 (all) or more", p.repeat_last_n);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) { check_sampling(params); }

double Sampler::draw() {
  if (const std::optional<double> u = std::exchange(given_back_, std::nullopt)) return *u;
  return double(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  return sample(logits, history, params_.temperature > 0.0f ? draw() : 0.0);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history, double u) const {
  apply_repetition_penalty(logits, history, params_.repeat_penalty, params_.repeat_last_n);
  if (params_.temperature <= 0.0f) return argmax(logits);
  const bool top_k = params_.top_k > 0 && size_t(params_.top_k) < logits.size();
  return pick(params_,
              top_k ? top_k_candidates(logits, params_.temperature, params_.top_k)
                    : leading_candidates(logits, params_.temperature, params_.top_p, params_.min_p),
              u);
}

int Sampler::top_count(int64_t vocab) const {
  const int count = params_.top_k + kTopMargin;
  return top_k_decides(params_) && count < vocab ? count : 0;
}

std::optional<int32_t> Sampler::sample_top(std::span<const TopLogit> largest) {
  const double u = draw();
  const std::optional<int32_t> id = model::sample_top(params_, largest, u);
  if (!id) give_back(u);  // the RNG as it was
  return id;
}

}  // namespace trellis::model
