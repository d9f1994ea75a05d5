// Launchers of the individual trellis kernel forms (internal to the CUDA
// backend; the public entry points are in include/trellis/cuda/trellis_ops.hpp
// and choose among these in dispatch.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "launch_constants.cuh"
#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda::detail {

// Shared memory of the tensor-core kernels: the staged operand rows
// (`operand_bytes`: fp16 or byte operands), their per-row info (2 x kMmaMaxM
// floats) and the staging reductions' scratch (stage_scratch_floats: two
// areas, so consecutive reductions need no barrier between them, of one
// 4-byte partial per warp and row, then one fp64 partial per warp for a
// residual-norm reader's sum); the fp16 axis-0 kernel adds its block
// sums (kAxis0WarpCols columns x `sum_cols` = M fp32 values per warp).
__host__ __device__ constexpr int stage_scratch_floats(int threads) { return 2 * (threads / 32) * (kMmaMaxM + 1); }
constexpr int axis1_smem_bytes(int operand_bytes) {
  return operand_bytes + (2 * kMmaMaxM + stage_scratch_floats(kAxis1Threads)) * 4;
}
constexpr int wgmma_axis1_smem_bytes(int cols) {
  return cols * 32 + (2 * kMmaMaxM + stage_scratch_floats(kWgmmaThreads)) * 4;
}
constexpr int axis0_smem_bytes(int sum_cols, int operand_bytes) {
  return (kMmaWarps * kAxis0WarpCols * sum_cols + 2 * kMmaMaxM + stage_scratch_floats(kMmaThreads)) * 4 + operand_bytes;
}

// Split-K scratch a launch may use.
struct SplitScratch {
  float* partials;
  unsigned* counters;
};

// Tensor-core, axis 1: one projection (plain output) or two (gate, up → SwiGLU tail).
// byte_operands: the integer form (imma), else fp16 operands (mma).
struct MmaAxis1Plan {
  bool byte_operands;
  int tiles, chunks_per_tile, chunks, warps, blocks, max_contrib, partial_cols, xf_stride, smem_bytes;
  std::size_t partial_floats;  // split-tile fp32 partials this launch may need (fp16 operands)
  std::size_t counters;        // zeroed scratch words: a counter per tile (bytes: and its int32 accumulators)
};
MmaAxis1Plan plan_mma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count, bool byte_operands);
void launch_mma_axis1(const MmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* x, int M,
                      uint16_t* out, SwigluTail tail, SplitScratch scratch, cudaStream_t stream,
                      const NormScale& scale = {});

// Integer tensor-core form, axis 1, on warpgroup MMAs (sm_90a, wgmma_axis1.cu):
// the imma form's results bit for bit, where wgmma_axis1_serves says so
// (compute capability 9.x, M 1..4 except gate/up at M = 1 with the gate at k = 3,
// cols·32 bytes of staged operand).
struct WgmmaAxis1Plan {
  int slices, chunks_per_tile, chunks, groups, blocks, smem_bytes;  // slices: 16-row output slices
  std::size_t counters;  // zeroed scratch words: a counter and the int32 accumulators per slice
};
bool wgmma_axis1_serves(const TrellisGeometry& g, int nproj, int M, int cc_major);
WgmmaAxis1Plan plan_wgmma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count);
void launch_wgmma_axis1(const WgmmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* x, int M,
                        uint16_t* out, SwigluTail tail, SplitScratch scratch, cudaStream_t stream,
                        const NormScale& scale = {});

// Row segments of an axis-0 tensor-core launch (grid = col_tiles x segments)
// and the split-K partials they need (axis0_call.cuh plans them).
struct Axis0Segments {
  int col_tiles, segments, slabs_per_segment;
  std::size_t partial_floats;
};

// Tensor-core, axis 0 (row-major or k3-interleaved codes), fp16 operands (mma).
struct MmaAxis0Plan {
  Axis0Segments split;
  int xf_stride, smem_bytes;
};
MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count);
void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                      SplitScratch scratch, cudaStream_t stream, const ResidualNormWrite& residual = {});

// Integer tensor-core form, axis 0 (imma_axis0.cu): the block's int32 column
// sums (kImmaAxis0SumSlots x 2M), its values in real units (256 x M fp32),
// the staging's info and scratch, then the staged operand.
constexpr int imma_axis0_smem_bytes(int M, int operand_bytes) {
  return (kImmaAxis0SumSlots * 2 * M + kBlockT * M + 2 * kMmaMaxM + stage_scratch_floats(kMmaThreads)) * 4 +
         operand_bytes;
}
struct ImmaAxis0Plan {
  Axis0Segments split;
  int x_stride, smem_bytes;
};
ImmaAxis0Plan plan_imma_axis0(const TrellisGeometry& g, int M, int sm_count);
void launch_imma_axis0(const ImmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M,
                       uint16_t* out, SplitScratch scratch, cudaStream_t stream, const ResidualNormWrite& residual = {});

}  // namespace trellis::cuda::detail
