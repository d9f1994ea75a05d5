// Greedy sampling on the GPU: the index of the largest of n fp32 values, the
// answer model::argmax (and std::max_element) gives on the host — the first of
// the largest; a NaN never replaces a value, a NaN at index 0 stays (answer 0),
// and with no value above −inf after index 0 the answer is 0.
//
// Each candidate is one 64-bit key, larger for the better answer:
//   key(i) = logit_key(x_i, i) (device_math.cuh)   for x_i > −inf, not NaN
//   key = 2^64 − 1 when x_0 is NaN; 0 stands for no candidate.
// So the largest key is the largest value with the lowest index; answer =
// 2^32 − 1 − (key mod 2^32), or 0 when the key is 0.
//
// Launch: kArgmaxBlocks blocks (fewer for short rows) of 256 threads, a
// grid-stride scan; each block's largest key goes to scratch, and the block
// that arrives last (counter in scratch, left at zero again) takes the largest
// of them and writes the answer. Deterministic (a max of keys), allocates
// nothing: capturable in the decode step's CUDA graph.
#include <cstdint>
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"
#include "trellis/error.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t block_max(uint64_t k, uint64_t* warp_keys) {
  for (int off = 16; off > 0; off >>= 1) k = max(k, __shfl_xor_sync(0xffffffffu, k, off));
  if (threadIdx.x % 32 == 0) warp_keys[threadIdx.x / 32] = k;
  __syncthreads();
  k = 0;
  for (int w = 0; w < kThreads / 32; ++w) k = max(k, warp_keys[w]);
  return k;
}

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* x, int64_t n, uint64_t* block_keys,
                                                          unsigned* counter, int32_t* answer) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  __shared__ uint64_t warp_keys[kThreads / 32];
  __shared__ bool last;
  uint64_t k = 0;
  const int64_t stride = int64_t(gridDim.x) * kThreads;
#pragma unroll 4
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    if (v > -INFINITY) k = max(k, logit_key(v, i));  // false for NaN
    else if (i == 0 && v != v) k = ~uint64_t(0);
  }
  k = block_max(k, warp_keys);
  if (threadIdx.x == 0) {
    block_keys[blockIdx.x] = k;
    __threadfence();
    last = atomicAdd(counter, 1u) + 1 == gridDim.x;
    if (last) *counter = 0;
  }
  __syncthreads();  // also: every read of warp_keys above precedes their reuse below
  if (!last) return;
  __threadfence();
  k = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) k = max(k, __ldcg(block_keys + b));
  k = block_max(k, warp_keys);
  if (threadIdx.x == 0) *answer = k == 0 ? 0 : int32_t(0xffffffffu - uint32_t(k));
}

}  // namespace

void launch_argmax(const float* x, int64_t n, ArgmaxScratch s, int32_t* answer, cudaStream_t stream) {
  if (n < 1 || n > INT32_MAX) throw Error("cuda backend: argmax: a row of " + std::to_string(n) + " values (1..2^31 − 1)");
  const int64_t wanted = (n + 4 * kThreads - 1) / (4 * kThreads);  // about 4 values per thread
  const unsigned blocks = unsigned(wanted < 1 ? 1 : wanted > kArgmaxBlocks ? kArgmaxBlocks : wanted);
  launch_programmatic(argmax_kernel, blocks, kThreads, 0, stream, x, n, s.block_keys, s.counter, answer);
  check_launch("argmax");
}

}  // namespace trellis::model::cuda
