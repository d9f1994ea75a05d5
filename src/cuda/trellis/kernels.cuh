// Launchers of the individual trellis kernel forms (internal to the CUDA
// backend; the public entry points are in include/trellis/cuda/trellis_ops.hpp
// and choose among these in dispatch.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "launch_constants.cuh"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda::detail {

// Shared memory of the tensor-core kernels: staged activations (axis 1:
// `operand_bytes` of fp16 or byte operand rows; axis 0: M rows of `stride`
// halves), their per-row info (2 x kMmaMaxM floats) and the staging
// reductions' scratch (one float per thread plus one per row); axis 0 adds
// its block sums (256 columns x M floats per warp).
constexpr int axis1_smem_bytes(int operand_bytes) {
  return operand_bytes + (2 * kMmaMaxM + kAxis1Threads + kMmaMaxM) * 4;
}
constexpr int mma_axis0_smem_bytes(int M, int stride) {
  return (kMmaWarps * 256 * M + 2 * kMmaMaxM + kMmaThreads + kMmaMaxM) * 4 + M * stride * 2;
}

// Split-K scratch a launch may use.
struct SplitScratch {
  float* partials;
  unsigned* counters;
};

// Tensor-core, axis 1: one projection (plain output) or two (gate, up → SwiGLU tail).
// byte_operands: the integer form (imma, mma_axis1.cu), else fp16 operands (mma).
struct MmaAxis1Plan {
  bool byte_operands;
  int tiles, chunks_per_tile, chunks, warps, blocks, max_contrib, partial_cols, xf_stride, smem_bytes;
  std::size_t partial_floats;  // split-tile partials this launch may need
};
MmaAxis1Plan plan_mma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count, bool byte_operands);
void launch_mma_axis1(const MmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* x, int M,
                      uint16_t* out, SwigluTail tail, SplitScratch scratch, cudaStream_t stream);

// Tensor-core, axis 0 (row-major or k3-interleaved codes).
struct MmaAxis0Plan {
  int col_tiles, segments, slabs_per_segment, xf_stride, smem_bytes;  // grid = col_tiles x segments
  std::size_t partial_floats;
};
MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count);
void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                      SplitScratch scratch, cudaStream_t stream);

}  // namespace trellis::cuda::detail
