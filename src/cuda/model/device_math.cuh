// Device helpers shared by the model kernels: bf16 bits <-> float (round to
// nearest even, as trellis/half.hpp does on the host), the grid-stride loop
// bound, the Pos read, RoPE's rotation of a pair, the 64-bit key of a logit,
// and the programmatic launch of the trellis kernels
// (trellis/cuda/programmatic_launch.cuh), which the decode step's kernels use.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::model::cuda::detail {

using ::trellis::cuda::allow_dependent_grids;
using ::trellis::cuda::launch_programmatic;
using ::trellis::cuda::wait_for_prerequisite_grids;

__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

__device__ __forceinline__ uint16_t float_to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ int read_pos(Pos p) { return p.dev ? *p.dev : p.host; }

// Value x_i of a row as a 64-bit key, larger for a larger value, then a lower
// index (the argmax and the largest logits; x_i not NaN):
//   key = order(x_i) · 2^32 + (2^32 − 1 − i),
//   order(v) = bits(v) ^ 0x80000000 (v ≥ 0), ~bits(v) (v < 0): increasing in v.
__device__ __forceinline__ uint64_t logit_key(float v, int64_t i) {
  const uint32_t b = __float_as_uint(v);
  const uint32_t order = (b & 0x80000000u) ? ~b : b ^ 0x80000000u;
  return (uint64_t(order) << 32) | (0xffffffffu - uint32_t(i));
}

// Rotate-half RoPE of one pair (the CPU backend's arithmetic): at position p
// with frequency f, a = fp32(p · f), c = fp32(cos a), s = fp32(sin a) (one
// fp64 sincos); (u, v) ← (u·c − v·s, v·c + u·s) in fp32, no contraction.
struct RopeAngle {
  float c, s;
};
__device__ __forceinline__ RopeAngle rope_angle(float p, float f) {
  double s, c;
  sincos(double(__fmul_rn(p, f)), &s, &c);
  return {float(c), float(s)};
}
__device__ __forceinline__ void rope_rotate(float& u, float& v, RopeAngle r) {
  const float a = u, b = v;
  u = __fsub_rn(__fmul_rn(a, r.c), __fmul_rn(b, r.s));
  v = __fadd_rn(__fmul_rn(b, r.c), __fmul_rn(a, r.s));
}

// Blocks for an elementwise kernel over n items, 256 threads each.
inline unsigned elementwise_blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return unsigned(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

}  // namespace trellis::model::cuda::detail
