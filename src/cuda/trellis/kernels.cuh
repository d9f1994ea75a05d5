// Launchers of the individual trellis kernel forms (internal to the CUDA
// backend; the public entry points are in include/trellis/cuda/trellis_ops.hpp
// and choose among these in dispatch.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda::detail {

// See stage_activations.cu. fold_scales: fp16 row scales folded in (axis 0), or null.
void stage_activations(const uint16_t* x, int M, int n, int n_pad, const uint16_t* fold_scales, uint16_t* xf,
                       float* info, cudaStream_t stream);

// Split-K scratch a launch may use.
struct SplitScratch {
  float* partials;
  unsigned* counters;
};

// Tensor-core, axis 1: one projection (plain output) or two (gate, up → SwiGLU tail).
struct MmaAxis1Plan {
  int tiles, segments, blocks_per_segment, blocks;
  std::size_t partial_floats;  // split-K partials this launch needs (0 when unsplit)
};
MmaAxis1Plan plan_mma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count);
void launch_mma_axis1(const MmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* xf,
                      const float* info, int M, uint16_t* out, SwigluTail tail, SplitScratch scratch,
                      cudaStream_t stream);

// Tensor-core, axis 0 (row-major or k3-interleaved codes).
struct MmaAxis0Plan {
  int col_tiles, segments, slabs_per_segment, rows_padded;  // grid = col_tiles x segments
  std::size_t partial_floats;
};
MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count);
void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* xf, const float* info,
                      int M, uint16_t* out, SplitScratch scratch, cudaStream_t stream);

}  // namespace trellis::cuda::detail
