// The Viterbi encode kernel's launch interface (private to the CUDA encoder;
// the math is in include/trellis/cuda/viterbi.hpp).
//
// Two forms: path costs in shared memory (L ≤ 12: 2^L/16 threads, each owning
// 16 states whose code values stay in registers) or in device memory
// (L ≥ 13: 2^L/64 threads, 64 states each, code values recomputed). Every
// launched thread block walks blocks blockIdx.x, blockIdx.x + gridDim.x, …
// with its own scratch slot: T·2^(L−k) back-pointer bytes, 2^(L−k) overlap
// bounds and, in the device-memory form, 2·2^L path costs.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trellis/cuda/viterbi.hpp"

namespace trellis::cuda::detail {

struct EncodeArgs {
  const float* v;        // blocks × T targets
  uint32_t* words;       // blocks × T·k/32
  uint32_t* states;      // blocks × T
  BlockResult* results;  // blocks, or null
  uint8_t* back;         // slots × T·H
  float* bounds;         // slots × H
  float* costs;          // slots × 2·2^L (device-memory form only)
  int64_t blocks;
  int k, L, T, max_overlaps;
};

struct EncodeShape {
  bool shared_costs;   // path costs in shared memory
  int threads;         // per thread block
  std::size_t smem;    // dynamic shared memory bytes
  int blocks_per_sm;   // resident thread blocks per SM (occupancy)
};

// The form and launch shape for (k, L, T) on the current device; throws
// trellis::Error when T needs more shared memory than the device has.
EncodeShape encode_shape(int k, int L, int T);

// Launches the kernel on `grid` thread blocks (each needs its scratch slot).
void launch_encode(const EncodeArgs& args, const EncodeShape& shape, int grid, cudaStream_t stream);

}  // namespace trellis::cuda::detail
