// Activation staging for the tensor-core forms.
//
// For each activation row m (one block each):
//   v_i   = x[m][i] · f_i            (f_i = fp16(scale_i)·RCP folded in for axis 0, else 1)
//   E_m   = the power of two putting max_i |v_i| in [2^14, 2^15)  (fp16 max is 65504)
//   xf_mi = fp16_rn(v_i · 2^E_m)     for i < n, 0 for n <= i < n_pad
//   info  = {Σ_i xf_mi in fp32, 2^-E_m}
// The scaling is exact (a power of two), so xf carries x at full fp16
// precision whatever its magnitude; kernels undo it once per output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.cuh"
#include "launch_constants.cuh"
#include "trellis/code.hpp"

namespace trellis::cuda::detail {
namespace {

__device__ float block_reduce(float v, bool take_max) {
  __shared__ float scratch[kStageThreads / 32];
  for (int o = 16; o; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = take_max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? scratch[lane] : 0.0f;
    for (int o = 16; o; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, v, o);
      v = take_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

__device__ __forceinline__ float folded(const __nv_bfloat16* x, const __half* scales, int i) {
  const float v = __bfloat162float(x[i]);
  return scales ? v * (__half2float(scales[i]) * kCodeRcp) : v;
}

__global__ void __launch_bounds__(kStageThreads) stage_kernel(const __nv_bfloat16* __restrict__ x, int n, int n_pad,
                                                              const __half* __restrict__ scales,
                                                              __half* __restrict__ xf, float* __restrict__ info) {
  const int m = blockIdx.x;
  const __nv_bfloat16* xr = x + size_t(m) * n;
  __half* out = xf + size_t(m) * n_pad;
  float amax = 0.0f;
  if (!scales) {  // max |x| straight from the bf16 bits, 8 per load when aligned
    const bool vec = n % 8 == 0 && (reinterpret_cast<uintptr_t>(xr) & 15) == 0;
    const int nv = vec ? n / 8 : 0;
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
      const uint4 v = reinterpret_cast<const uint4*>(xr)[i];
      for (uint32_t w : {v.x, v.y, v.z, v.w})
        amax = fmaxf(amax, fmaxf(fabsf(__uint_as_float(w << 16)), fabsf(__uint_as_float(w & 0xffff0000u))));
    }
    for (int i = nv * 8 + threadIdx.x; i < n; i += blockDim.x) amax = fmaxf(amax, fabsf(__bfloat162float(xr[i])));
  } else {
    for (int i = threadIdx.x; i < n; i += blockDim.x) amax = fmaxf(amax, fabsf(folded(xr, scales, i)));
  }
  amax = block_reduce(amax, true);
  int e = 0;
  if (amax > 0.0f && isfinite(amax)) {
    int ex;
    frexpf(amax, &ex);  // amax in [2^(ex-1), 2^ex)
    e = 15 - ex;
  }
  const float up = ldexpf(1.0f, e);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n_pad; i += blockDim.x) {
    const __half h = i < n ? __float2half_rn(folded(xr, scales, i) * up) : __float2half_rn(0.0f);
    out[i] = h;
    sum += __half2float(h);
  }
  sum = block_reduce(sum, false);
  if (threadIdx.x == 0) {
    info[2 * m] = sum;
    info[2 * m + 1] = ldexpf(1.0f, -e);
  }
}

}  // namespace

void stage_activations(const uint16_t* x, int M, int n, int n_pad, const uint16_t* fold_scales, uint16_t* xf,
                       float* info, cudaStream_t stream) {
  stage_kernel<<<M, kStageThreads, 0, stream>>>(reinterpret_cast<const __nv_bfloat16*>(x), n, n_pad,
                                                reinterpret_cast<const __half*>(fold_scales),
                                                reinterpret_cast<__half*>(xf), info);
}

}  // namespace trellis::cuda::detail
