// Whole-tensor decode: each block's states by the running window recurrence
// (state_{t+1} = ((state_t << k) | next k bits) mod 2^L), checked against the
// direct window definition in tests; then w = float32(y)·f_r per element.
#include "trellis/codec/expand.hpp"

#include <vector>

#include "trellis/code.hpp"
#include "trellis/half.hpp"

namespace trellis {

void decode_block_states(const uint32_t* words, int T, int k, int L, uint32_t* states) {
  const uint32_t nbits = uint32_t(T) * uint32_t(k);
  const uint32_t lmask = L >= 32 ? 0xffffffffu : ((1u << L) - 1u);
  states[0] = block_state(words, T, k, L, 0);
  // The window of t+1 starts k bits before the window of t: its low k bits are
  // new, its high L-k bits are the low L-k bits of state_t.
  for (int t = 1; t < T; ++t) {
    const uint32_t start = uint32_t(T - 1 - t) * uint32_t(k);  // new window start
    uint32_t fresh = 0;
    for (int b = 0; b < k; ++b) {
      const uint32_t p = (start + uint32_t(b)) % nbits;
      fresh |= ((words[p >> 5] >> (p & 31u)) & 1u) << b;
    }
    states[t] = ((states[t - 1] << k) | fresh) & lmask;
  }
}

namespace {

template <typename Store>
void expand(const TrellisTensorView& w, Store store) {
  const TrellisGeometry& g = w.geom;
  std::vector<uint32_t> states(size_t(g.T));
  for (int64_t r = 0; r < g.rows; ++r) {
    const float f = row_factor(fp16_to_float(w.scales[r]));
    for (int64_t b = 0; b < g.blocks_per_row(); ++b) {
      decode_block_states(w.codes + g.block_offset(r, b), g.T, g.k, g.L, states.data());
      for (int t = 0; t < g.T; ++t) {
        const int64_t c = b * g.T + t;
        const float v = float(code_value(states[size_t(t)])) * f;
        // stored [rows, cols]; logical W [out, in]
        const int64_t o = g.axis == 1 ? r : c;
        const int64_t i = g.axis == 1 ? c : r;
        store(o * g.in_features + i, v);
      }
    }
  }
}

}  // namespace

void expand_to_f32(const TrellisTensorView& w, float* out) {
  expand(w, [out](int64_t idx, float v) { out[idx] = v; });
}

void expand_to_bf16(const TrellisTensorView& w, uint16_t* out) {
  expand(w, [out](int64_t idx, float v) { out[idx] = float_to_bf16(v); });
}

}  // namespace trellis
