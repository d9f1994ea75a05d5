// The Walsh–Hadamard butterflies of the activation rotation (SPEC §5), shared
// by the rotation kernels (hadamard.cu) and the residual norm (add_rmsnorm.cu)
// so both compute the same fp32 values: on n consecutive elements in shared
// memory (n a multiple of T), log2(T) stages; stage len pairs element
// i = (p / len)·2·len + p mod len with i + len for p < n/2, (a, b) ← (a + b,
// a − b). Pairs never cross a T-block, so every T-block is transformed on its
// own. The caller scales by fp32(1/√T) afterwards. Every thread of the block
// calls it; it synchronises before each stage and after the last.
#pragma once

namespace trellis::model::cuda::detail {

__device__ __forceinline__ void hadamard_butterflies(float* b, int n, int T) {
  for (int len = 1; len < T; len <<= 1) {
    __syncthreads();
    for (int p = threadIdx.x; p < n / 2; p += blockDim.x) {
      const int i = (p / len) * 2 * len + p % len, j = i + len;
      const float u = b[i], w = b[j];
      b[i] = u + w;
      b[j] = u - w;
    }
  }
  __syncthreads();
}

}  // namespace trellis::model::cuda::detail
