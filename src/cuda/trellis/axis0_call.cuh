// What the axis-0 tensor-core launchers (mma_axis0.cu, imma_axis0.cu) share
// on the host side:
//   plan_axis0_segments(g, M, sm_count, nslabs, max_slabs, sharing_warps)
//       the grid's row segments (grid = 256-column blocks × segments): enough
//       blocks for kMmaMinBlocksPerSm per SM, each of the `sharing_warps` that
//       split a segment's slabs keeping at least one, and at most `max_slabs`
//       slabs per segment (what its staged activations may hold); the
//       split-K partials (segments × cols × M fp32) when there is more than one.
//   set_axis0_call(args, w, x, M, out, split, scratch, residual)  the argument
//       fields both kernels have: geometry, code words, scales, activations,
//       the segments, the split-K scratch, the output and the residual-norm
//       producer's buffers (finish_segments; M = 1 only).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels.cuh"
#include "trellis/error.hpp"

namespace trellis::cuda::detail {

inline Axis0Segments plan_axis0_segments(const TrellisGeometry& g, int M, int sm_count, int nslabs, int max_slabs,
                                         int sharing_warps) {
  Axis0Segments s{};
  s.col_tiles = int(g.cols / kBlockT);
  const int want = std::max(1, sm_count * kMmaMinBlocksPerSm / s.col_tiles);
  const int fit = (nslabs + max_slabs - 1) / max_slabs;
  const int segments = std::max(fit, std::clamp(want, 1, std::max(1, nslabs / sharing_warps)));
  s.slabs_per_segment = (nslabs + segments - 1) / segments;
  s.segments = (nslabs + s.slabs_per_segment - 1) / s.slabs_per_segment;
  s.partial_floats = s.segments > 1 ? std::size_t(s.segments) * g.cols * M : 0;
  return s;
}

template <class Args>
void set_axis0_call(Args& a, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                    const Axis0Segments& split, SplitScratch scratch, const ResidualNormWrite& residual) {
  if (residual.x && M != 1)
    throw Error("axis-0 tensor-core form: a residual-norm producer runs at M = 1, got M=" + std::to_string(M));
  a.geom = w.geom;
  a.codes = w.codes;
  a.scales = reinterpret_cast<const __half*>(w.scales);
  a.x = reinterpret_cast<const __nv_bfloat16*>(x);
  a.M = M;
  a.segments = split.segments;
  a.slabs_per_segment = split.slabs_per_segment;
  a.partials = scratch.partials;
  a.counters = scratch.counters;
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  a.residual = residual;
}

}  // namespace trellis::cuda::detail
