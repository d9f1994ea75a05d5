// Fused gate/up/SwiGLU on the CPU: out[M, F] = silu(x·Gᵀ) ⊙ (x·Uᵀ) for two
// trellis tensors G, U [F, in] that may differ in k, L, T, axis and layout.
//
// Both projections are computed with trellis_linear_f32 in `mode`, rounded to
// bf16, then combined by the tail:
//   split : swiglu_split — bit-identical to two trellis_linear calls followed
//           by the standalone swiglu;
//   fused : swiglu_fused.
// x is bf16 [M, in], out is bf16 [M, F]; the views are borrowed. Throws
// trellis::Error when G and U do not have the same in/out features.
#pragma once
#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cpu {

void gate_up_swiglu(const TrellisTensorView& gate, const TrellisTensorView& up, Numerics mode,
                    SwigluTail tail, const uint16_t* x_bf16, int64_t M, uint16_t* out_bf16);

}  // namespace trellis::cpu
