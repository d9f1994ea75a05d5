// What the RMSNorm kernel (add_rmsnorm.cu) uses: the block size for a group
// of n elements and the group's scale from the threads' partial sums of
// squares.
//   threads    about one per 4 elements, a multiple of 32 in [32, 1024]: a
//              decode step's layer norm is one group of 5120, and one 128-thread
//              block spent ≈ 20 µs there, each thread waiting on 40 loads in turn
//              (bench/results/h200_runtime_profile.txt); with the loads batched,
//              320 threads of 16 elements still made generation 8 % slower than
//              1024 of 5 (h200_norm_threads_experiment.txt)
//   rms_scale  fp32(1 / sqrt(Σ / n + eps)), sum and root in fp64: each warp
//              sums by xor shuffles, then warp 0 sums the warp sums the same
//              way (a fixed order) and one thread takes the root (fp64
//              division and square root are long sequences: one thread, not
//              1024), and the block reads the scale from shared memory
#pragma once
#include <algorithm>

namespace trellis::model::cuda::detail {

constexpr int kNormMaxThreads = 1024;

inline int norm_threads(int n) { return std::min(kNormMaxThreads, std::max(32, (n / 4 + 31) / 32 * 32)); }

// blockDim.x a multiple of 32, at most kNormMaxThreads; every thread calls it,
// once per kernel (the shared values are not guarded for reuse). Also a
// barrier: every thread's reads before the call precede every write after it.
__device__ __forceinline__ float rms_scale(double v, int n, float eps) {
  __shared__ double warp_sums[kNormMaxThreads / 32];
  __shared__ float scale;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    double total = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0;
    for (int off = 16; off > 0; off >>= 1) total += __shfl_xor_sync(0xffffffffu, total, off);
    if (threadIdx.x == 0) scale = float(1.0 / sqrt(total / double(n) + double(eps)));
  }
  __syncthreads();
  return scale;
}

}  // namespace trellis::model::cuda::detail
