// Last-arriving block of a group (split-K style completion, used by the
// trellis kernels' segment sums and the decode attention's split combine):
// every block of the group stores its partial results, then calls
// block_arrive_last from every thread; it returns true in every thread of the
// one block that arrives last, after which that block sees every other
// block's stores (read them with __ldcg: they are not in this SM's L1). The
// last block re-arms the counter to zero, so a counter is zero between
// launches (counters come zeroed from Context::counters).
#pragma once
#include <cuda_runtime.h>

namespace trellis::cuda {

__device__ __forceinline__ bool block_arrive_last(unsigned* counter, unsigned expected) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) + 1 == expected;
    if (last) *counter = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

}  // namespace trellis::cuda
