// The sampler's choice from a row's largest logits (steps 3–6 of
// sampling.hpp with top-k), written once for the host (model::sample_top,
// and the sampler's own candidate lists) and the CUDA choice kernel
// (src/cuda/model/top_choice.cu), so that both give the same token for the
// same logits and draw.
//
// For that every step is a sequence of IEEE binary32/binary64 operations
// in a fixed order, each rounded to nearest: divisions, sums and products
// with no multiply-add that a compiler could contract (the one multiply-add
// chain, in sampling_exp, is written with fma(), which both sides compute
// exactly rounded), and the softmax's exponential is computed here rather
// than by a math library, whose expf differs between glibc and CUDA in the
// last place:
//   sampling_exp(x) = fp32(2^n · P(r)),  n = rint(x · log2 e),
//   r = x − n·ln2 (two fma steps with ln2 split in a high and a low part),
//   P = the degree-13 Taylor polynomial of e^r (|r| ≤ 0.35: error < 2^−60
//   relative), evaluated by Horner's rule in fma; 0 below −104 (e^−104 is
//   under half the smallest binary32), a NaN passes through. Within one
//   binary32 ulp of e^x (tested against std::exp).
//
// The candidates (id, scaled logit, then probability) are ordered by
// candidate_before: larger value first, then lower id (a strict total order
// on a NaN-free list with distinct ids, so any correct sort gives the same
// list). choose_from_top(team, largest, count, p, u, work) is the token, or
// kChoiceDeclined where the `count` largest logits (largest_logits' order,
// no NaN) do not settle it: count ≤ top_k, or the last one's scaled logit
// not below the k-th candidate's (equal values past the margin).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "trellis/hd.hpp"

namespace trellis::model {

struct TopLogit {
  int32_t id;
  float logit;
};

struct Candidate {
  int32_t id;
  float prob;
};

// What the choice from the largest logits takes of the sampling parameters
// (the repetition penalty is 1 wherever it applies).
struct TopChoiceParams {
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
};

inline constexpr int32_t kChoiceDeclined = -2;

TRELLIS_HD float sampling_exp(float x) {
  if (!(x > -104.0f)) return x != x ? x : 0.0f;
  const double d = x;
  const double n = rint(d * 0x1.71547652b82fep0);
  double r = fma(-n, 0x1.62e42fefa39efp-1, d);
  r = fma(-n, 0x1.abc9e3b39803fp-56, r);
  constexpr double kInverseFactorials[] = {  // 1/13!, 1/12!, …, 1/1!, 1/0!
      0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22,
      0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10,
      0x1.1111111111111p-7,  0x1.5555555555555p-5,  0x1.5555555555555p-3,  0x1.0p-1,
      0x1.0p0,               0x1.0p0};
  double p = kInverseFactorials[0];
  for (int i = 1; i < 14; ++i) p = fma(p, r, kInverseFactorials[i]);
  // 2^n exactly: |n| ≤ 151, a normal binary64.
  const auto biased = uint64_t(int64_t(n) + 1023) << 52;
#if defined(__CUDA_ARCH__)
  const double scale = __longlong_as_double(int64_t(biased));
#else
  double scale;
  std::memcpy(&scale, &biased, sizeof scale);
#endif
  return float(p * scale);
}

TRELLIS_HD bool candidate_before(const Candidate& a, const Candidate& b) {
  return a.prob != b.prob ? a.prob > b.prob : a.id < b.id;
}

// Who runs the steps below: a team whose members split the per-candidate
// work (member m takes candidates m, m + size, …) while member 0 alone runs
// the sequential parts (sums, scans, the sort) and share() hands its value
// to every member; sync() makes the members' writes to the candidates
// visible to all. The host is a team of one (SerialTeam); the CUDA kernel's
// is a warp, with the candidates in shared memory. Each candidate's value
// comes from the same operations whoever computes it, and the sequential
// parts run in list order, so every team gives the same result.
struct SerialTeam {
  TRELLIS_HD int rank() const { return 0; }
  TRELLIS_HD int size() const { return 1; }
  TRELLIS_HD void sync() const {}
  template <class T>
  TRELLIS_HD T share(T v) const {
    return v;
  }
};

// Insertion sort by candidate_before (the lists here are short and, from
// largest_logits, all but sorted already).
TRELLIS_HD void sort_candidates(Candidate* c, int n) {
  for (int i = 1; i < n; ++i) {
    const Candidate x = c[i];
    int j = i;
    for (; j > 0 && candidate_before(x, c[j - 1]); --j) c[j] = c[j - 1];
    c[j] = x;
  }
}

// prob_i ← fp32(prob_i / Σ prob), the sum in binary64 in list order.
template <class Team>
TRELLIS_HD void renormalize(const Team& t, Candidate* c, int n) {
  double total = 0;
  if (t.rank() == 0)
    for (int i = 0; i < n; ++i) total += c[i].prob;
  total = t.share(total);
  for (int i = t.rank(); i < n; i += t.size()) c[i].prob = float(c[i].prob / total);
  t.sync();
}

// Sorted candidates holding scaled logits → softmax probabilities.
template <class Team>
TRELLIS_HD void to_probabilities(const Team& t, Candidate* c, int n) {
  const float top = t.share(c[0].prob);
  for (int i = t.rank(); i < n; i += t.size()) c[i].prob = sampling_exp(c[i].prob - top);
  t.sync();
  renormalize(t, c, n);
}

// Step 4: the leading candidates whose mass first reaches top_p (at least
// one), renormalized; returns how many stay (all of them for top_p ≥ 1).
template <class Team>
TRELLIS_HD int keep_top_p(const Team& t, Candidate* c, int n, float top_p) {
  if (top_p >= 1.0f) return n;
  int kept = 0;
  if (t.rank() == 0) {
    double mass = 0;
    while (kept < n && (kept == 0 || mass < top_p)) mass += c[kept++].prob;
  }
  kept = t.share(kept);
  renormalize(t, c, kept);
  return kept;
}

// Step 5: the first candidate and those with prob ≥ min_p · the first's, in
// order, renormalized; returns how many stay (all of them for min_p ≤ 0).
template <class Team>
TRELLIS_HD int keep_min_p(const Team& t, Candidate* c, int n, float min_p) {
  if (min_p <= 0.0f) return n;
  int kept = 1;
  if (t.rank() == 0) {
    const float floor = min_p * c[0].prob;
    for (int i = 1; i < n; ++i)
      if (!(c[i].prob < floor)) c[kept++] = c[i];
  }
  t.sync();
  kept = t.share(kept);
  renormalize(t, c, kept);
  return kept;
}

// Step 6: the first candidate whose cumulative probability (binary64, in
// order) exceeds u, else the last.
TRELLIS_HD int32_t pick_candidate(const Candidate* c, int n, double u) {
  double cumulative = 0;
  for (int i = 0; i < n; ++i)
    if ((cumulative += c[i].prob) > u) return c[i].id;
  return c[n - 1].id;
}

// Step 3 from the largest logits: c[0..top_k) the sorted candidates with
// their scaled logits, and top_k returned; 0 where they do not settle it.
// c has room for count entries.
template <class Team>
TRELLIS_HD int top_candidates(const Team& t, const TopLogit* largest, int count, float temperature, int top_k,
                              Candidate* c) {
  if (top_k < 1 || count <= top_k) return 0;
  for (int i = t.rank(); i < count; i += t.size()) c[i] = {largest[i].id, largest[i].logit / temperature};
  t.sync();
  if (t.rank() == 0) sort_candidates(c, count);
  t.sync();
  // An id outside `largest` has a logit ≤ the last one's, so after the
  // division one ≤ last: below the k-th it cannot be among the first k.
  const float last = largest[count - 1].logit / temperature;
  return last < c[top_k - 1].prob ? top_k : 0;
}

template <class Team>
TRELLIS_HD int32_t choose_from_top(const Team& t, const TopLogit* largest, int count, const TopChoiceParams& p,
                                   double u, Candidate* work) {
  int n = top_candidates(t, largest, count, p.temperature, p.top_k, work);
  if (n == 0) return kChoiceDeclined;
  to_probabilities(t, work, n);
  n = keep_top_p(t, work, n, p.top_p);
  n = keep_min_p(t, work, n, p.min_p);
  return t.share(t.rank() == 0 ? pick_candidate(work, n, u) : 0);
}

}  // namespace trellis::model
