// What the RMSNorm kernels (rmsnorm.cu, add_rmsnorm.cu) share: the block
// size for a group of n elements and the block-wide fp64 sum of the
// threads' partial sums of squares.
//   threads   about one per 4 elements, a multiple of 32 in [32, 1024]: a
//             decode step's layer norm is one group of 5120, and one 128-thread
//             block spent ≈ 20 µs there, each thread waiting on 40 loads in turn
//             (bench/results/h200_runtime_profile.txt)
//   block_sum each warp sums by xor shuffles, then every thread adds the warp
//             sums in warp order (the same total, bit for bit, in every thread)
#pragma once
#include <algorithm>

namespace trellis::model::cuda::detail {

constexpr int kNormMaxThreads = 1024;

inline int norm_threads(int n) { return std::min(kNormMaxThreads, std::max(32, (n / 4 + 31) / 32 * 32)); }

// blockDim.x a multiple of 32, at most kNormMaxThreads; every thread calls it,
// once per kernel (the shared sums are not guarded for reuse).
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double warp_sums[kNormMaxThreads / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (int i = 0; i < int(blockDim.x) / 32; ++i) total += warp_sums[i];
  return total;
}

}  // namespace trellis::model::cuda::detail
