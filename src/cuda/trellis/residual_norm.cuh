// The two halves of a residual RMSNorm split across launches (the contract:
// ResidualNormWrite and NormScale in trellis_ops.hpp).
//   producer, per output i:  x_i += fp32(bf16(y_i)), image_i = bf16(x_i · w_i), returns x_i² (fp64)
//   producer, per block b:   partials[b] = Σ of its outputs' x_i², summed in a fixed order
//   reader:                  s = 1 / √(Σ_b partials[b] / n + eps), Σ in fp64, the mean and root in fp32
// The norm kernel takes the root in fp64 and rounds it to fp32; the fast
// fp32 division and rsqrtf are within a few ulp of that, far below the bf16
// image's rounding, and short (fp64 division and square root sequences are
// long and take registers the kernels do not have free at their staging).
// A reader sums the partials in a fixed order (each thread its slots
// t, t + threads, …, then a fixed xor tree and the warps in order), so every
// block of a launch computes the same s.
#pragma once
#include <cuda_bf16.h>

#include "trellis/cuda/trellis_ops.hpp"

namespace trellis::cuda::detail {

// Producer: output i's residual step (x, w: this output's residual and
// weight, loaded early by the caller); stores x and the image, returns x².
__device__ __forceinline__ double residual_norm_output(const ResidualNormWrite& r, int i, float x, float w, float y) {
  const float v = __fadd_rn(x, __bfloat162float(__float2bfloat16_rn(y)));
  r.x[i] = v;
  reinterpret_cast<__nv_bfloat16*>(r.image)[i] = __float2bfloat16_rn(__fmul_rn(v, w));
  return double(v) * double(v);
}

__device__ __forceinline__ double warp_sum_f64(double v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Reader: this thread's share of the partials (slots first, first + stride, …);
// with count <= stride one load whose value is used only at the sum.
__device__ __forceinline__ double norm_partials_share(const NormScale& s, int first, int stride) {
  double v = 0.0;
  for (int i = first; i < s.count; i += stride) v += __ldcg(s.partials + i);
  return v;
}

__device__ __forceinline__ float norm_scale_of(double total, const NormScale& s) {
  return rsqrtf(__fdividef(float(total), float(s.n)) + s.eps);
}

}  // namespace trellis::cuda::detail
