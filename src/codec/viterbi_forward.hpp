// The add-compare-select recursion of the bitshift trellis (private to the
// codec; the encoder in viterbi.cpp is its only caller).
//
// States s in [0, 2^L). s is reached from p by one k-bit shift,
// s = ((p << k) | b) mod 2^L, so the 2^k predecessors of s are
// p = (s >> k) + j·2^(L−k), j in [0, 2^k): all successors (h << k) | b of one
// "head" h = s >> k share the predecessor set {h + j·H}, H = 2^(L−k).
// Step t (1 ≤ t < T) computes
//   m[h]        = min_j cost[h + j·H],   back[t·H + h] = argmin_j (lowest j on ties)
//   cost'[h·2^k + b] = m[h] + (y[h·2^k + b] − v[t])²
// The min runs over 2^k contiguous arrays of length H, so it vectorizes.
// Costs are float; the predecessor index is stored as one byte (k ≤ 8).
#pragma once
#include <cstdint>

namespace trellis::detail {

// y: the 2^L code values (any state numbering the shift rule holds for);
// v: T targets; cost: 2^L path costs of step 0 on entry; spare: 2^L floats
// of scratch; back: T·H bytes (row 0 unused). 1 ≤ k ≤ 8, k < L ≤ 16.
// Returns the buffer (cost or spare) holding the step T−1 costs.
float* viterbi_forward(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                       uint8_t* back);

}  // namespace trellis::detail
