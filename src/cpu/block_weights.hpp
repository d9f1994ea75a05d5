// One decoded block of a trellis tensor in a numerics mode's per-weight form:
//   rounded  : round_bf16(float32(y)·f_r)
//   f32      : float32(y)·f_r
//   factored : float32(y)              (f_r is applied by the caller)
// for y = y(state_t) of block b of stored row r, t in [0, T), written to
// out[t·stride]. `states` is scratch for T states.
#pragma once
#include <cstdint>

#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/half.hpp"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cpu {

inline float stored_row_factor(const TrellisTensorView& w, int64_t r) {
  return row_factor(fp16_to_float(w.scales[r]));
}

inline void block_weights(const TrellisTensorView& w, int64_t r, int64_t b, Numerics mode,
                          uint32_t* states, float* out, int stride) {
  const TrellisGeometry& g = w.geom;
  decode_block_states(w.codes + g.block_offset(r, b), g.T, g.k, g.L, states);
  const float f = stored_row_factor(w, r);
  switch (mode) {
    case Numerics::rounded:
      for (int t = 0; t < g.T; ++t) out[t * stride] = round_bf16(float(code_value(states[t])) * f);
      break;
    case Numerics::f32:
      for (int t = 0; t < g.T; ++t) out[t * stride] = float(code_value(states[t])) * f;
      break;
    case Numerics::factored:
      for (int t = 0; t < g.T; ++t) out[t * stride] = float(code_value(states[t]));
      break;
  }
}

}  // namespace trellis::cpu
