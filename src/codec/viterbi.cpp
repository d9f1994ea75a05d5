// Tail-biting Viterbi encoder: overlap bounds, then constrained passes in
// increasing bound order (the math and contract are in
// include/trellis/codec/viterbi.hpp; the vectorized recursion in
// viterbi_forward.cpp).
#include "trellis/codec/viterbi.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "trellis/code.hpp"
#include "trellis/error.hpp"
#include "viterbi_forward.hpp"

namespace trellis {

void pack_block_states(const uint32_t* states, int T, int k, uint32_t* words) {
  const int nwords = T * k / 32;
  for (int w = 0; w < nwords; ++w) words[w] = 0;
  const uint32_t low = (1u << k) - 1u;
  for (int t = 0; t < T; ++t) {
    const uint32_t bits = states[t] & low;
    const uint32_t pos = uint32_t(T - 1 - t) * uint32_t(k);
    for (int b = 0; b < k; ++b) {
      const uint32_t p = pos + uint32_t(b);
      words[p >> 5] |= ((bits >> b) & 1u) << (p & 31u);
    }
  }
}

ViterbiEncoder::ViterbiEncoder(int k, int L, int T, int max_overlaps)
    : k_(k), L_(L), T_(T), max_overlaps_(max_overlaps) {
  if (k < 1 || k > 8) throw Error("viterbi: k = " + std::to_string(k) + " is outside [1, 8]");
  if (L <= k || L > 16) throw Error("viterbi: L = " + std::to_string(L) + " must satisfy k < L <= 16");
  if (T <= 0 || T % 32 != 0) throw Error("viterbi: T = " + std::to_string(T) + " is not a positive multiple of 32");
  if (max_overlaps < 1) throw Error("viterbi: max_overlaps = " + std::to_string(max_overlaps) + " must be >= 1");
  const size_t S = size_t(1) << L;
  const size_t H = S >> k;
  y_.resize(S);
  y_rev_.resize(S);
  rev_.resize(S);
  for (uint32_t s = 0; s < S; ++s) {
    uint32_t r = 0;
    for (int b = 0; b < L; ++b) r |= ((s >> b) & 1u) << (L - 1 - b);
    rev_[s] = r;
    y_[s] = float(code_value(s));
  }
  for (uint32_t s = 0; s < S; ++s) y_rev_[s] = y_[rev_[s]];
  cost_.resize(S);
  spare_.resize(S);
  targets_.resize(size_t(T));
  bound_.resize(H);
  back_.resize(size_t(T) * H);
  order_.resize(H);
  trial_.resize(size_t(T));
  path_.resize(size_t(T));
}

float ViterbiEncoder::overlap_bounds(const float* v) {
  const uint32_t S = 1u << L_;
  const uint32_t H = S >> k_;
  const int half = T_ / 2;
  // First half of the rotated block: v[half … T−1], ending at the wrap (t = T−1).
  for (uint32_t s = 0; s < S; ++s) {
    const float d = y_[s] - v[half];
    cost_[s] = d * d;
  }
  const float* F = detail::viterbi_forward(y_.data(), v + half, T_ - half, k_, L_, cost_.data(),
                                           spare_.data(), back_.data());
  for (uint32_t o = 0; o < H; ++o) {
    float m = F[o];
    for (uint32_t j = 1; j < (1u << k_); ++j) m = std::min(m, F[o + j * H]);
    bound_[o] = m;
  }
  // Second half, v[0 … half−1], backwards in time over bit-reversed states,
  // ending at t = 0.
  for (int i = 0; i < half; ++i) targets_[size_t(i)] = v[half - 1 - i];
  for (uint32_t s = 0; s < S; ++s) {
    const float d = y_rev_[s] - targets_[0];
    cost_[s] = d * d;
  }
  const float* G = detail::viterbi_forward(y_rev_.data(), targets_.data(), half, k_, L_, cost_.data(),
                                           spare_.data(), back_.data());
  float lower = std::numeric_limits<float>::infinity();
  for (uint32_t o = 0; o < H; ++o) {
    float m = G[rev_[o << k_]];
    for (uint32_t b = 1; b < (1u << k_); ++b) m = std::min(m, G[rev_[(o << k_) | b]]);
    bound_[o] += m;
    lower = std::min(lower, bound_[o]);
  }
  return lower;
}

float ViterbiEncoder::constrained_pass(const float* v, uint32_t o) {
  const uint32_t S = 1u << L_;
  const uint32_t H = S >> k_;
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t s = 0; s < S; ++s) {
    const float d = y_[s] - v[0];
    cost_[s] = (s >> k_) == o ? d * d : inf;
  }
  const float* fin = detail::viterbi_forward(y_.data(), v, T_, k_, L_, cost_.data(), spare_.data(),
                                             back_.data());
  uint32_t s = o;
  for (uint32_t j = 1; j < (1u << k_); ++j)
    if (fin[o + j * H] < fin[s]) s = o + j * H;
  const float cost = fin[s];
  trial_[size_t(T_ - 1)] = s;
  for (int t = T_ - 1; t > 0; --t) {
    const uint32_t h = s >> k_;
    s = h + uint32_t(back_[size_t(t) * H + h]) * H;
    trial_[size_t(t - 1)] = s;
  }
  return cost;
}

BlockEncoding ViterbiEncoder::encode_block(const float* v, uint32_t* words, uint32_t* states) {
  const uint32_t H = 1u << (L_ - k_);
  BlockEncoding out;
  out.lower_bound = overlap_bounds(v);

  const uint32_t ranked = std::min(uint32_t(max_overlaps_) + 1u, H);
  std::iota(order_.begin(), order_.end(), 0u);
  std::partial_sort(order_.begin(), order_.begin() + ranked, order_.end(),
                    [this](uint32_t a, uint32_t b) { return bound_[a] < bound_[b]; });
  float best = std::numeric_limits<float>::infinity();
  uint32_t tried = 0;
  while (tried < ranked && tried < uint32_t(max_overlaps_) && bound_[order_[tried]] < best) {
    const float e = constrained_pass(v, order_[tried]);
    if (e < best) {
      best = e;
      path_.swap(trial_);
    }
    ++tried;
  }
  out.certified = tried == H || bound_[order_[tried]] >= best;

  pack_block_states(path_.data(), T_, k_, words);
  for (int t = 0; t < T_; ++t) {
    const double d = double(y_[path_[size_t(t)]]) - double(v[t]);
    out.error += d * d;
    if (states) states[t] = path_[size_t(t)];
  }
  return out;
}

}  // namespace trellis
