// One decoded block of a trellis tensor in a numerics mode's per-weight form:
//   rounded  : round_bf16(float32(y)·f_r)
//   f32      : float32(y)·f_r
//   factored : float32(y)              (f_r is applied by the caller)
// for y = y(state_t) of block b of stored row r, t in [0, T), written to
// out[t·stride].
//
// Decode (SPEC §2, O(1) per position): state_t is the L-bit window at stream
// bit p = (T−1−t)·k. With the block's wpb words copied to `scratch` followed
// by word 0 again (the circular wrap; T·k is a multiple of 32), the window
// lies in the 64 bits scratch[p/32] | scratch[p/32 + 1] << 32 since
// p mod 32 + L ≤ 31 + 16. y(state) comes from a table of all 2^16 code
// values (any L ≤ 16 indexes its first 2^L entries). This is ~7× faster than
// the bit-serial codec::decode_block_states; the kernels' tests check it
// bit for bit against expand_to_f32/expand_to_bf16, which use the latter.
// `scratch` must hold T·k/32 + 1 words.
#pragma once
#include <cstdint>

#include "trellis/code.hpp"
#include "trellis/half.hpp"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cpu {

// float32(code_value(s)) for s in [0, 2^16).
const float* code_value_table();

inline float stored_row_factor(const TrellisTensorView& w, int64_t r) {
  return row_factor(fp16_to_float(w.scales[r]));
}

inline void block_weights(const TrellisTensorView& w, int64_t r, int64_t b, Numerics mode,
                          uint32_t* scratch, float* out, int stride) {
  const TrellisGeometry& g = w.geom;
  const int wpb = g.words_per_block();
  const uint32_t* words = w.codes + g.block_offset(r, b);
  for (int i = 0; i < wpb; ++i) scratch[i] = words[i];
  scratch[wpb] = words[0];
  const uint32_t mask = (1u << g.L) - 1u;
  const uint32_t k = uint32_t(g.k);
  const float* y = code_value_table();
  auto code = [&](int t) {
    const uint32_t p = uint32_t(g.T - 1 - t) * k;
    const uint64_t pair = uint64_t(scratch[(p >> 5) + 1]) << 32 | scratch[p >> 5];
    return y[uint32_t(pair >> (p & 31u)) & mask];
  };
  const float f = stored_row_factor(w, r);
  switch (mode) {
    case Numerics::rounded:
      for (int t = 0; t < g.T; ++t) out[t * stride] = round_bf16(code(t) * f);
      break;
    case Numerics::f32:
      for (int t = 0; t < g.T; ++t) out[t * stride] = code(t) * f;
      break;
    case Numerics::factored:
      for (int t = 0; t < g.T; ++t) out[t * stride] = code(t);
      break;
  }
}

}  // namespace trellis::cpu
