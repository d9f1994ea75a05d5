// Deterministic split-K completion: every warp that computed a partial of an
// output tile stores it and counts itself in (a release); the warp that
// arrives last (its count an acquire) sums all partials in segment order (so
// results do not depend on which warp finished when), writes the outputs, and
// re-arms the counter to zero. Integer partials may instead be added into
// zeroed accumulators (add_split_tile).
#pragma once
#include <cuda/atomic>
#include <cuda_bf16.h>

#include "launch_constants.cuh"
#include "residual_norm.cuh"

namespace trellis::cuda::detail {

// Counts one arrival at `counter` (acq_rel at device scope: releases what the
// caller's barrier ordered before it, acquires every earlier arrival's);
// the count before it.
__device__ __forceinline__ unsigned count_arrival(unsigned* counter) {
  return ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device>(*counter).fetch_add(1u, ::cuda::memory_order_acq_rel);
}

// Call from all 32 lanes after this warp's partial stores. True in the last
// arrival. The warp barrier orders every lane's stores before lane 0's count,
// whose release makes them visible to the arrival that acquires it (the last
// one), and the barrier after the acquire orders it before every lane's reads.
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned expected) {
  __syncwarp();
  unsigned prev = 0;
  if ((threadIdx.x & 31) == 0) prev = count_arrival(counter);
  prev = __shfl_sync(0xffffffffu, prev, 0);
  const bool last = prev + 1 == expected;
  if (last) {
    __syncwarp();
    if ((threadIdx.x & 31) == 0) *counter = 0;
  }
  return last;
}

// Exact integer split-K (the integer tensor-core forms), for one warp's
// 16-row slice of a tile: sum[p][e] is lane (g, q)'s entry e of projection p
// (row g for e < 2, else g + 8; column 2q + (e & 1), kept where < cols) in
// `totals` ([NPROJ][kTileRows][cols] int32, zero before the first contributor). Each
// contributing warp adds its entries (integer sums do not depend on the
// order), then arrives; the last arrival reads the totals into sum and leaves
// them zero again: one round trip to L2, where summing stored partials in
// order takes one per contributor. Lanes past `cols` read a clamped entry (so
// the reads stay in uniform code) and own none. All 32 lanes call it; true in
// the last arrival.
template <int NPROJ>
__device__ __forceinline__ bool add_split_tile(int (&sum)[NPROJ][4], int* totals, int cols, unsigned* counter,
                                               unsigned contributors) {
  const int lane = int(threadIdx.x & 31), g = lane >> 2, q = lane & 3;
  int* at[4][NPROJ];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int ri = e < 2 ? g : g + 8, col = 2 * q + (e & 1);
#pragma unroll
    for (int p = 0; p < NPROJ; ++p) {
      at[e][p] = totals + (p * kTileRows + ri) * cols + min(col, cols - 1);
      if (col < cols) atomicAdd(at[e][p], sum[p][e]);
    }
  }
  if (!arrive_last(counter, contributors)) return false;
#pragma unroll
  for (int e = 0; e < 4; ++e)
#pragma unroll
    for (int p = 0; p < NPROJ; ++p) sum[p][e] = __ldcg(at[e][p]);
  __syncwarp();  // every lane's reads before any lane's reset (lanes may read the same entry)
#pragma unroll
  for (int e = 0; e < 4; ++e)
#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
      if (2 * q + (e & 1) < cols) *at[e][p] = 0;
  return true;
}

// The same for a whole block: call from every thread after the block's
// partial stores; true in every thread of the last block to arrive (thread
// 0's count releases the block's stores and acquires the others', each
// barrier orders the block's threads around it).
__device__ __forceinline__ bool block_arrive_last(unsigned* counter, unsigned expected) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    last = count_arrival(counter) + 1 == expected;
    if (last) *counter = 0;
  }
  __syncthreads();
  return last;
}

// The last arrival's ordered sums: for each of N outputs, the `count` fp32
// partials base[offset[n] + j·stride] (j = 0..count−1) added in j order from 0.0f, so
// bit for bit the sequential sum, with the loads of kBatch partials of all N
// outputs in flight together: one L2 round trip per kBatch partials, where a
// loop per output waits on each in turn (bench/results/h200_ordered_sums_experiment.txt).
// Outputs with live[n] false load nothing and sum to 0.
template <int N, int kBatch>
__device__ __forceinline__ void ordered_sums(float (&sum)[N], const float* base, const int (&offset)[N],
                                             const bool (&live)[N], size_t stride, int count) {
#pragma unroll
  for (int n = 0; n < N; ++n) sum[n] = 0.0f;
  for (int j0 = 0; j0 < count; j0 += kBatch) {
    float v[kBatch][N];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
#pragma unroll
      for (int n = 0; n < N; ++n)
        v[b][n] = live[n] && j0 + b < count ? __ldcg(base + offset[n] + size_t(j0 + b) * stride) : 0.0f;
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
#pragma unroll
      for (int n = 0; n < N; ++n)
        if (j0 + b < count) sum[n] += v[b][n];
  }
}

// Axis-0 split-K over row segments, for one column block (the kBlockT
// columns from c0) of segment `seg`: `values` (shared memory, index c·M + m:
// the block's sums in real units, written before a block barrier) go to the
// segment's partials ([segments][C][M] fp32); the last-arriving block of the
// column block adds the segments' partials from 0.0f in segment order and
// writes out ([M][C] bf16). With one segment the values are the outputs.
// A thread owns outputs t, t + blockDim, … . kAllOutputsAtOnce (for blocks of
// kMmaThreads) puts the loads of all of them in flight
// together (ordered_sums), so the sum takes the same few L2 round trips at
// M = 8 as at M = 1; otherwise one output at a time, a batch of segments in
// flight, one or two round trips per output in turn.
// With residual.x (M = 1, at least kBlockT threads: thread t owns column
// c0 + t) the block is a residual-norm producer instead (residual_norm.cuh):
// out is not written, and the block's Σ x² goes to residual.partials[c0 / kBlockT].
// Every thread of the block calls it.
template <bool kAllOutputsAtOnce>
__device__ __forceinline__ void finish_segments(const float* values, int M, int C, int c0, int seg, int segments,
                                                float* partials, unsigned* counter, __nv_bfloat16* out,
                                                const ResidualNormWrite& residual) {
  const int n = kBlockT * M;
  // The column's residual and weight, loaded before the arrival so that their latency overlaps it.
  const bool produces = residual.x != nullptr;
  float res_x = 0.0f, res_w = 0.0f;
  if (produces && int(threadIdx.x) < n) res_x = residual.x[c0 + threadIdx.x], res_w = residual.w[c0 + threadIdx.x];
  if (segments > 1) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) partials[(size_t(seg) * C + c0) * M + i] = values[i];
    if (!block_arrive_last(counter, unsigned(segments))) return;
  }
  double ss = 0.0;
  const auto emit = [&](int i, float s) {
    const int c = i / M, m = i - c * M;
    if (produces) ss += residual_norm_output(residual, c0 + c, res_x, res_w, s);
    else out[size_t(m) * C + c0 + c] = __float2bfloat16_rn(s);
  };
  if constexpr (kAllOutputsAtOnce) {
    static_assert(kBlockT <= kMmaThreads, "kBlockT·M outputs for M ≤ kMmaMaxM fit kMmaMaxM per thread");
    int offset[kMmaMaxM];
    bool live[kMmaMaxM];
#pragma unroll
    for (int u = 0; u < kMmaMaxM; ++u) {
      offset[u] = int(threadIdx.x) + u * int(blockDim.x);
      live[u] = offset[u] < n;
    }
    float sums[kMmaMaxM];
    if (segments > 1) {
      ordered_sums<kMmaMaxM, 8>(sums, partials + size_t(c0) * M, offset, live, size_t(C) * M, segments);
    } else {
#pragma unroll
      for (int u = 0; u < kMmaMaxM; ++u) sums[u] = live[u] ? values[offset[u]] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kMmaMaxM; ++u)
      if (live[u]) emit(offset[u], sums[u]);
  } else {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      float s = values[i];
      if (segments > 1) {
        s = 0.0f;
#pragma unroll 8  // the loads of a batch of segments in flight together; the sum stays in segment order
        for (int sg = 0; sg < segments; ++sg) s += __ldcg(partials + (size_t(sg) * C + c0) * M + i);
      }
      emit(i, s);
    }
  }
  if (!produces) return;
  __shared__ double warp_ss[32];
  ss = warp_sum_f64(ss);
  if ((threadIdx.x & 31) == 0) warp_ss[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) t += warp_ss[w];
    residual.partials[c0 / kBlockT] = t;
  }
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
