// bf16 SwiGLU element functions and the standalone op (math in
// trellis/cpu/swiglu.hpp). Every intermediate is rounded with round_bf16;
// exp is the fp32 std::exp.
#include "trellis/cpu/swiglu.hpp"

#include <cmath>

#include "trellis/half.hpp"

namespace trellis::cpu {

uint16_t swiglu_split(uint16_t gate, uint16_t up) {
  const float g = bf16_to_float(gate);
  const float e = round_bf16(std::exp(std::fabs(g)));
  const float d = round_bf16(1.0f + e);
  const float v = round_bf16(1.0f / d);
  const float sigma = g < 0.0f ? v : round_bf16(1.0f - v);
  const float silu = round_bf16(g * sigma);
  return float_to_bf16(silu * bf16_to_float(up));
}

uint16_t swiglu_fused(uint16_t gate, uint16_t up) {
  const float g = bf16_to_float(gate);
  const float sigma = round_bf16(1.0f / (1.0f + std::exp(-g)));
  const float silu = round_bf16(g * sigma);
  return float_to_bf16(silu * bf16_to_float(up));
}

void swiglu(const uint16_t* gate, const uint16_t* up, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = swiglu_split(gate[i], up[i]);
}

}  // namespace trellis::cpu
