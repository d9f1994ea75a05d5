// SwiGLU tails on the GPU (SPEC §4), from fp32 gate/up sums.
//   split : g, u rounded to bf16; e = bf16(exp(|g|)), d = bf16(1 + e), v = bf16(1/d),
//           σ = g < 0 ? v : bf16(1 − v), silu = bf16(g·σ), out = bf16(silu·u)
//           — the standalone swiglu op's arithmetic, so a fused launch is
//           bit-identical to two bf16 projections followed by swiglu().
//   fused : g, u rounded to bf16; σ = bf16(1/(1+exp(−g))), silu = bf16(g·σ),
//           out = bf16(silu·u).
#pragma once
#include <cuda_bf16.h>

#include "trellis/numerics.hpp"

namespace trellis::cuda::detail {

__device__ __forceinline__ float bf16_round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

__device__ __forceinline__ float swiglu_split(float g, float u) {
  g = bf16_round(g);
  u = bf16_round(u);
  const float e = bf16_round(expf(fabsf(g)));
  const float d = bf16_round(1.0f + e);
  const float v = bf16_round(1.0f / d);
  const float sigma = g < 0.0f ? v : bf16_round(1.0f - v);
  const float silu = bf16_round(g * sigma);
  return bf16_round(silu * u);
}

__device__ __forceinline__ float swiglu_fused(float g, float u) {
  g = bf16_round(g);
  u = bf16_round(u);
  const float sigma = bf16_round(1.0f / (1.0f + expf(-g)));
  const float silu = bf16_round(g * sigma);
  return bf16_round(silu * u);
}

__device__ __forceinline__ float swiglu_tail(SwigluTail tail, float g, float u) {
  return tail == SwigluTail::split ? swiglu_split(g, u) : swiglu_fused(g, u);
}

}  // namespace trellis::cuda::detail
