// Standalone bf16 swiglu: out_i = swiglu_split(gate_i, up_i) over n elements
// (swiglu.cuh: every step rounded to bf16, exp in fp32) — the arithmetic the
// `split` tail of the fused gate/up forms reproduces bit for bit.
//
// Launch: grid-stride, 8 elements per thread per step with 16-byte loads and
// stores when all three pointers are 16-byte aligned; the rest (or everything,
// when unaligned) one element per thread. Elementwise, any n; memory-bound.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "cuda_core_kernels.cuh"
#include "swiglu.cuh"

namespace trellis::cuda::detail {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t swiglu_word(uint32_t g, uint32_t u) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(swiglu_split(bf16_lo(g), bf16_lo(u)), swiglu_split(bf16_hi(g), bf16_hi(u)));
  return *reinterpret_cast<const uint32_t*>(&h);
}

__global__ void __launch_bounds__(kThreads) swiglu_vec_kernel(const uint4* __restrict__ g, const uint4* __restrict__ u,
                                                              uint4* __restrict__ o, std::size_t n8) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n8;
       i += std::size_t(gridDim.x) * kThreads) {
    const uint4 a = __ldg(g + i), b = __ldg(u + i);
    o[i] = make_uint4(swiglu_word(a.x, b.x), swiglu_word(a.y, b.y), swiglu_word(a.z, b.z), swiglu_word(a.w, b.w));
  }
}

__global__ void __launch_bounds__(kThreads) swiglu_scalar_kernel(const __nv_bfloat16* __restrict__ g,
                                                                 const __nv_bfloat16* __restrict__ u,
                                                                 __nv_bfloat16* __restrict__ o, std::size_t begin,
                                                                 std::size_t n) {
  for (std::size_t i = begin + blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads)
    o[i] = __float2bfloat16_rn(swiglu_split(__bfloat162float(g[i]), __bfloat162float(u[i])));
}

int grid_for(std::size_t items, int sm_count) {
  const std::size_t most = std::size_t(std::max(sm_count, 1)) * 8;
  return int(std::max<std::size_t>(1, std::min(most, (items + kThreads - 1) / kThreads)));
}

}  // namespace

void launch_swiglu(const uint16_t* gate, const uint16_t* up, uint16_t* out, std::size_t n, int sm_count,
                   cudaStream_t stream) {
  if (n == 0) return;
  const auto* g = reinterpret_cast<const __nv_bfloat16*>(gate);
  const auto* u = reinterpret_cast<const __nv_bfloat16*>(up);
  auto* o = reinterpret_cast<__nv_bfloat16*>(out);
  const bool aligned =
      ((reinterpret_cast<std::uintptr_t>(gate) | reinterpret_cast<std::uintptr_t>(up) |
        reinterpret_cast<std::uintptr_t>(out)) & 15u) == 0;
  std::size_t done = 0;
  if (aligned) {
    const std::size_t n8 = n / 8;
    if (n8 > 0)
      swiglu_vec_kernel<<<grid_for(n8, sm_count), kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(gate),
                                                               reinterpret_cast<const uint4*>(up),
                                                               reinterpret_cast<uint4*>(out), n8);
    done = n8 * 8;
  }
  if (done < n) swiglu_scalar_kernel<<<grid_for(n - done, sm_count), kThreads, 0, stream>>>(g, u, o, done, n);
}

}  // namespace trellis::cuda::detail
