// Numerics modes of the trellis kernels (SPEC §3) and the SwiGLU tails
// (SPEC §4), shared by the CPU and CUDA backends.
//
// Numerics — how a kernel forms y = W x from codes y(s) and row factors f_r:
//   rounded  : each weight is bf16_rne(float32(y)·f_r) (= expand, then GEMM);
//   f32      : each weight is the canonical fp32 float32(y)·f_r;
//   factored : raw y is accumulated (exact in fp32/fp16 operands) and f_r is
//              applied once per output (axis 1) or folded into the activation
//              x_i·f_i (axis 0).
// SwigluTail — how out = silu(gate)·up is rounded:
//   split : bit-identical to two bf16 projections + the standalone bf16 swiglu;
//   fused : sigma = bf16(1/(1+exp(-g))), silu = bf16(g·sigma), out = bf16(silu·up).
#pragma once

namespace trellis {

enum class Numerics { rounded, f32, factored };
enum class SwigluTail { split, fused };

constexpr const char* to_string(Numerics n) {
  switch (n) {
    case Numerics::rounded: return "rounded";
    case Numerics::f32: return "f32";
    case Numerics::factored: return "factored";
  }
  return "?";
}

constexpr const char* to_string(SwigluTail t) {
  switch (t) {
    case SwigluTail::split: return "split";
    case SwigluTail::fused: return "fused";
  }
  return "?";
}

}  // namespace trellis
