// Activation staging for the tensor-core forms, run by a whole block into
// shared memory at the start of the kernel (no separate launch, no global
// round trip).
//
// For each activation row m < M and the n source values of the slice,
//   v_i   = x[m][col0 + i] · f_i      (f_i = fp16(scale_{col0+i})·RCP folded in, axis 0; else 1)
//   E_m   = the power of two putting max_i |v_i| in [2^14, 2^15)   (fp16 max is 65504)
//   xf_mi = fp16_rn(v_i · 2^E_m) for i < n, 0 for n <= i < n_pad
//   info  = {Σ_i xf_mi in fp32, 2^−E_m}
// The scaling is exact (a power of two), so xf carries x at full fp16
// precision whatever its magnitude; kernels undo it once per output.
//
// Values move in groups of 8 (n and n_pad are multiples of 8). Group j of row
// m lands at uint4 index slot(j) of that row, `stride` halves apart: the
// kernels pick the slot order and the padding that keep their fragment
// loads free of bank conflicts. Every block of a launch computes the same
// bits (fixed thread→group mapping and reduction order), so blocks that stage
// the same slice agree exactly.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "launch_constants.cuh"
#include "trellis/code.hpp"

namespace trellis::cuda::detail {

struct StageSlice {
  const __nv_bfloat16* x;  // row m starts at x + m·x_stride
  int x_stride, col0, n, n_pad, M;
  const __half* fold;  // scales indexed like x's columns, or null
};

// Shared memory the reduction needs: [warps][kMmaMaxM] floats.
__host__ __device__ constexpr int stage_scratch_floats(int warps) { return warps * kMmaMaxM; }

namespace stage_impl {

__device__ __forceinline__ void load_group(const StageSlice& s, int m, int j, bool vec, float (&v)[8]) {
  const int i0 = s.col0 + 8 * j;
  const __nv_bfloat16* src = s.x + size_t(m) * s.x_stride + i0;
  if (8 * j >= s.n) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = 0.0f;
    return;
  }
  if (vec) {
    const uint4 w = *reinterpret_cast<const uint4*>(src);
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      v[2 * e] = __uint_as_float(ws[e] << 16);
      v[2 * e + 1] = __uint_as_float(ws[e] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = __bfloat162float(src[e]);
  }
  if (s.fold) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] *= __half2float(s.fold[i0 + e]) * kCodeRcp;
  }
}

// Reduces one value per row across the block; every thread gets the results.
template <bool kMax>
__device__ __forceinline__ void block_reduce_rows(float (&v)[kMmaMaxM], int M, float* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) {
    for (int o = 16; o; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, v[m], o);
      v[m] = kMax ? fmaxf(v[m], other) : v[m] + other;
    }
  }
  __syncthreads();  // scratch may still be read from a previous reduction
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < kMmaMaxM; ++m) scratch[warp * kMmaMaxM + m] = v[m];
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) {
    float r = scratch[m];
    for (int w = 1; w < warps; ++w) r = kMax ? fmaxf(r, scratch[w * kMmaMaxM + m]) : r + scratch[w * kMmaMaxM + m];
    v[m] = m < M ? r : 0.0f;
  }
}

}  // namespace stage_impl

// Stages the slice into xf (row m at xf + m·stride halves, group j at uint4
// slot(j) of the row) and info[2m], info[2m+1]. Ends with a block barrier.
template <typename Slot>
__device__ void stage_block(const StageSlice& s, __half* xf, int stride, float* info, float* scratch, Slot slot) {
  using namespace stage_impl;
  const int groups = s.n_pad / 8;
  const bool vec = (s.x_stride % 8 == 0) && (s.col0 % 8 == 0) && ((reinterpret_cast<uintptr_t>(s.x) & 15) == 0);
  float r[kMmaMaxM];
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) r[m] = 0.0f;
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) {
    if (m >= s.M) break;
    for (int j = threadIdx.x; j < groups; j += blockDim.x) {
      float v[8];
      load_group(s, m, j, vec, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) r[m] = fmaxf(r[m], fabsf(v[e]));
    }
  }
  block_reduce_rows<true>(r, s.M, scratch);
  float up[kMmaMaxM];
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) {
    int e = 0;
    if (r[m] > 0.0f && isfinite(r[m])) {
      int ex;
      frexpf(r[m], &ex);  // max in [2^(ex-1), 2^ex)
      e = 15 - ex;
    }
    up[m] = ldexpf(1.0f, e);
    if (threadIdx.x == 0 && m < s.M) info[2 * m + 1] = ldexpf(1.0f, -e);
    r[m] = 0.0f;
  }
#pragma unroll
  for (int m = 0; m < kMmaMaxM; ++m) {
    if (m >= s.M) break;
    for (int j = threadIdx.x; j < groups; j += blockDim.x) {
      float v[8];
      load_group(s, m, j, vec, v);
      uint32_t packed[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const __half2 h = __floats2half2_rn(v[2 * e] * up[m], v[2 * e + 1] * up[m]);
        r[m] += __low2float(h) + __high2float(h);
        packed[e] = *reinterpret_cast<const uint32_t*>(&h);
      }
      reinterpret_cast<uint4*>(xf + size_t(m) * stride)[slot(j)] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    }
  }
  block_reduce_rows<false>(r, s.M, scratch);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int m = 0; m < kMmaMaxM; ++m)
      if (m < s.M) info[2 * m] = r[m];
  }
  __syncthreads();
}

}  // namespace trellis::cuda::detail
