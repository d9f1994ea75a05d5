// Standalone bf16 SwiGLU, out = silu(gate) · up, element by element.
//
// swiglu_split rounds every step to bf16 (SPEC §4 `split`; exp in fp32):
//   e = bf16(exp(|g|)), d = bf16(1 + e), v = bf16(1/d),
//   sigma = g < 0 ? v : bf16(1 − v), silu = bf16(g·sigma), out = bf16(silu·up).
// swiglu_fused is the fused-kernel tail (SPEC §4 `fused`):
//   sigma = bf16(1/(1 + exp(−g))), silu = bf16(g·sigma), out = bf16(silu·up).
// Inputs and outputs are raw bf16 bits; NaN in gives NaN out.
#pragma once
#include <cstdint>

namespace trellis::cpu {

uint16_t swiglu_split(uint16_t gate, uint16_t up);
uint16_t swiglu_fused(uint16_t gate, uint16_t up);

// out[i] = swiglu_split(gate[i], up[i]) for i in [0, n).
void swiglu(const uint16_t* gate, const uint16_t* up, uint16_t* out, int64_t n);

}  // namespace trellis::cpu
