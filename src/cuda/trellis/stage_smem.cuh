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
#include <type_traits>

#include "launch_constants.cuh"
#include "trellis/code.hpp"

namespace trellis::cuda::detail {

struct StageSlice {
  const __nv_bfloat16* x;  // row m starts at x + m·x_stride
  int x_stride, col0, n, n_pad, M;
  const __half* fold;  // scales indexed like x's columns, or null
};

namespace stage_impl {

// The 8 bf16 values of group j of row m (zeros past n), as they are in memory.
__device__ __forceinline__ uint4 load_raw(const StageSlice& s, int m, int j, bool vec) {
  if (8 * j >= s.n) return make_uint4(0u, 0u, 0u, 0u);
  const __nv_bfloat16* src = s.x + size_t(m) * s.x_stride + s.col0 + 8 * j;
  if (vec) return *reinterpret_cast<const uint4*>(src);
  uint32_t w[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    w[e] = uint32_t(__bfloat16_as_ushort(src[2 * e])) | uint32_t(__bfloat16_as_ushort(src[2 * e + 1])) << 16;
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// v_i of the group: the bf16 values widened, times f_i when folding.
__device__ __forceinline__ void group_values(const StageSlice& s, int j, uint4 raw, float (&v)[8]) {
  const uint32_t ws[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    v[2 * e] = __uint_as_float(ws[e] << 16);
    v[2 * e + 1] = __uint_as_float(ws[e] & 0xffff0000u);
  }
  if (s.fold && 8 * j < s.n) {
    const __half* f = s.fold + s.col0 + 8 * j;
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] *= __half2float(f[e]) * kCodeRcp;
  }
}

// A warp's sum or max of v over its lanes of each row: a fixed xor tree for
// float sums; one redux instruction for int sums and for maxima (the values
// are |x| >= 0, +inf included, so their bit patterns order as the floats do).
template <bool kMax, typename T>
__device__ __forceinline__ T warp_reduce(T v) {
  if constexpr (kMax) {
    static_assert(sizeof(T) == 4 && !std::is_integral_v<T>);
    return __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(v)));
  } else if constexpr (std::is_integral_v<T>) {
    return T(__reduce_add_sync(0xffffffffu, unsigned(v)));
  } else {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
  }
}

// Thread t works on row t % M (the first M·⌊threads/M⌋ threads; the others
// pass the identity, 0). Reduces the per-thread values of each row in a fixed
// order — each warp over its lanes of the row (warp_reduce), then every
// thread over the warps' partials in warp order — and returns the calling
// thread's row's. T is float (max of |x| or sum) or int (sum; exact). One
// barrier; `area` (0 or 1) picks the scratch half, and a reduction may use an
// area again only after another barrier has passed since its last use.
template <bool kMax, typename T>
__device__ __forceinline__ T reduce_row(T v, int M, float* scratch_floats, int area) {
  static_assert(sizeof(T) == 4);
  const int warp = threadIdx.x >> 5, warps = int(blockDim.x) >> 5, row = int(threadIdx.x) % M;
  T* partial = reinterpret_cast<T*>(scratch_floats) + area * (warps * kMmaMaxM);
  // M = 1 alone: with only the row loop, ptxas spills 12–24 bytes in three
  // warpgroup gate/up instances (96 registers), where nothing spills this way.
  if (M == 1) {
    const T r = warp_reduce<kMax>(v);
    if ((threadIdx.x & 31) == 0) partial[warp * kMmaMaxM] = r;
  } else {
    for (int m = 0; m < M; ++m) {
      const T r = warp_reduce<kMax>(row == m ? v : T(0));
      if ((threadIdx.x & 31) == 0) partial[warp * kMmaMaxM + m] = r;
    }
  }
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) {
    const T x = partial[w * kMmaMaxM + row];
    if constexpr (kMax) total = fmaxf(total, x);
    else total += x;
  }
  return total;
}

}  // namespace stage_impl

// Stages the slice into xf (row m at xf + m·stride halves, group j at uint4
// slot(j) of the row) and info[2m], info[2m+1]. Needs M <= warps of the
// block; ends with a block barrier.
template <typename Slot>
__device__ void stage_block(const StageSlice& s, __half* xf, int stride, float* info, float* scratch, Slot slot) {
  using namespace stage_impl;
  const int groups = s.n_pad / 8, per_row = int(blockDim.x) / s.M;
  const int m = int(threadIdx.x) % s.M, first = int(threadIdx.x) / s.M;
  const bool vec = (s.x_stride % 8 == 0) && (s.col0 % 8 == 0) && ((reinterpret_cast<uintptr_t>(s.x) & 15) == 0);
  const int end = first < per_row ? groups : 0;  // threads past M·per_row only join the reductions
  // Pass 1: the max from global memory, the raw values parked in their slots.
  float amax = 0.0f;
  uint4* row = reinterpret_cast<uint4*>(xf + size_t(m) * stride);
#pragma unroll 4
  for (int j = first; j < end; j += per_row) {
    const uint4 raw = load_raw(s, m, j, vec);
    row[slot(j)] = raw;
    float v[8];
    group_values(s, j, raw, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = fmaxf(amax, fabsf(v[e]));
  }
  amax = reduce_row<true>(amax, s.M, scratch, 0);
  int ex = 0;
  if (amax > 0.0f && isfinite(amax)) {
    frexpf(amax, &ex);  // max in [2^(ex-1), 2^ex)
    ex = 15 - ex;
  }
  const float up = ldexpf(1.0f, ex);
  if (first == 0) info[2 * m + 1] = ldexpf(1.0f, -ex);
  // Pass 2: each thread converts the slots it parked, in place.
  float sum = 0.0f;
#pragma unroll 4
  for (int j = first; j < end; j += per_row) {
    float v[8];
    group_values(s, j, row[slot(j)], v);
    uint32_t packed[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const __half2 h = __floats2half2_rn(v[2 * e] * up, v[2 * e + 1] * up);
      sum += __low2float(h) + __high2float(h);
      packed[e] = *reinterpret_cast<const uint32_t*>(&h);
    }
    row[slot(j)] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
  sum = reduce_row<false>(sum, s.M, scratch, 1);
  if (first == 0) info[2 * m] = sum;
  __syncthreads();
}

}  // namespace trellis::cuda::detail
