// Tail-biting Viterbi encoder for one block of the bitshift trellis (SPEC §2).
//
// Given T targets v_t in code units (the weights divided by the row factor
// f_r), choose states s_0 … s_{T−1} with s_{t+1} = ((s_t << k) | b_t) mod 2^L
// and the circular condition s_0 >> k == s_{T−1} mod 2^(L−k) (the stream wraps:
// state_0's high L−k bits are the first L−k stream bits, which are the low
// bits of state_{T−1}), minimizing E = Σ_t (y(s_t) − v_t)².
//
// The overlap o = s_{T−1} mod 2^(L−k) is the only coupling the circle adds.
// For a fixed o, the best circular path is one Viterbi pass that starts in
// {s : s >> k == o} and ends in {s : s mod 2^(L−k) == o}. Which o?
//  1. Bounds: cut the circle at T/2 instead of at the wrap. The best linear
//     path over the targets rotated by T/2 whose state at the wrap has low
//     bits o costs C(o) ≤ E*(o) (it is a relaxation: the circular path with
//     overlap o is one such path). C(o) = min F + min G, with F the forward
//     costs of the first half up to the wrap and G the backward costs of the
//     second half (a forward pass over the reversed targets with the
//     bit-reversed code table: reversing time turns the left shift into a
//     right shift, which is a left shift of the bit-reversed state).
//     min_o C(o) is the best non-circular encoding: a lower bound on E.
//  2. Constrained passes for the overlaps in increasing C(o), keeping the best
//     circular path, until the next C(o) is no smaller than the best E found
//     (then the result is the exact optimum: "certified") or max_overlaps
//     passes have run. max_overlaps = 1 is QTIP's two-pass scheme.
// The result is always a valid circular stream.
//
// State s_t contributes its low k bits at stream bits (T−1−t)·k … +k−1; the
// words hold stream bit i at bit i%32 of word i/32, so decode_block_states
// (codec/expand.hpp) returns exactly the chosen states.
#pragma once
#include <cstdint>
#include <vector>

namespace trellis {

// Packs a circular state sequence (T states) into T·k/32 words.
void pack_block_states(const uint32_t* states, int T, int k, uint32_t* words);

struct BlockEncoding {
  double error = 0.0;        // Σ_t (y(s_t) − v_t)² of the chosen circular path
  double lower_bound = 0.0;  // best non-circular cost: no circular path beats it
  bool certified = false;    // the chosen path is the exact circular optimum
};

// One encoder per thread: it owns the trellis scratch (2^L path costs twice
// and T·2^(L−k) back-pointer bytes). Requires 1 ≤ k ≤ 8, k < L ≤ 16, T a
// positive multiple of 32, max_overlaps ≥ 1 (throws trellis::Error otherwise).
class ViterbiEncoder {
 public:
  ViterbiEncoder(int k, int L, int T, int max_overlaps = 2);

  // Encodes one block: writes T·k/32 words and, when `states` is given, the T
  // chosen states.
  BlockEncoding encode_block(const float* v, uint32_t* words, uint32_t* states = nullptr);

  int k() const { return k_; }
  int L() const { return L_; }
  int T() const { return T_; }

 private:
  // C(o) for every overlap into bound_; returns min_o C(o).
  float overlap_bounds(const float* v);
  // Best circular path through overlap o into trial_; returns its cost.
  float constrained_pass(const float* v, uint32_t o);

  int k_, L_, T_, max_overlaps_;
  std::vector<float> y_;         // y(s) for every state, as float
  std::vector<float> y_rev_;     // y(bit-reverse_L(s))
  std::vector<uint32_t> rev_;    // bit-reverse_L(s)
  std::vector<float> cost_, spare_, targets_, bound_;
  std::vector<uint8_t> back_;
  std::vector<uint32_t> order_, trial_, path_;
};

}  // namespace trellis
