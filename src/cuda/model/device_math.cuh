// Device helpers shared by the model kernels: bf16 bits <-> float (round to
// nearest even, as trellis/half.hpp does on the host), the grid-stride loop
// bound, the Pos read, and the programmatic launch of the trellis kernels
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

// Blocks for an elementwise kernel over n items, 256 threads each.
inline unsigned elementwise_blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return unsigned(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

}  // namespace trellis::model::cuda::detail
