// Deterministic split-K completion: every warp that computed a partial of an
// output tile stores it, fences, and counts itself in; the warp that arrives
// last sums all partials in segment order (so results do not depend on which
// warp finished when), writes the outputs, and re-arms the counter to zero.
// Integer partials may instead be added into zeroed accumulators (take_totals).
#pragma once

namespace trellis::cuda::detail {

// Call from all 32 lanes after this warp's partial stores. True in the last arrival.
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned expected) {
  __threadfence();
  __syncwarp();
  unsigned prev = 0;
  if ((threadIdx.x & 31) == 0) prev = atomicAdd(counter, 1u);
  prev = __shfl_sync(0xffffffffu, prev, 0);
  const bool last = prev + 1 == expected;
  if (last) {
    __threadfence();
    if ((threadIdx.x & 31) == 0) *counter = 0;
  }
  return last;
}

// Exact integer split-K (the integer tensor-core forms): each contributing
// warp adds its int32 partials into accumulators that start at zero (integer
// sums do not depend on the order), then arrives; the last arrival reads the
// totals with take_totals and leaves the accumulators zero again. One round
// trip to L2 for the totals, where summing stored partials in order takes one
// per contributor. n values per lane at `at[i]`; all 32 lanes call it.
template <int N>
__device__ __forceinline__ void take_totals(int* const (&at)[N], const bool (&own)[N], int (&out)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = __ldcg(at[i]);
  __syncwarp();  // every lane's reads before any lane's reset (lanes may read the same entry)
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (own[i]) *at[i] = 0;
}

// The same for a whole block: call from every thread after the block's
// partial stores; true in every thread of the last block to arrive.
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

// Work units of one block: a contiguous share of [0, units), balanced to one unit.
struct UnitRange {
  int begin, end;
};
__device__ __forceinline__ UnitRange block_units(int units) {
  const long long b = blockIdx.x, nb = gridDim.x;
  return {int(b * units / nb), int((b + 1) * units / nb)};
}

}  // namespace trellis::cuda::detail
