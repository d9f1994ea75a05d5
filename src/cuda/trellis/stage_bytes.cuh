// Activation staging for the integer tensor-core form (imma, axis 1): all of
// x, as the int8 B operand of m16n8k32 MMAs whose A operand is the four bytes
// of each weight's 1MAD hash, so the tensor core forms the byte sum.
//
// For each activation row m < M over its n = cols values:
//   S_m   = 32639 / max_i |x_mi|   (1 when the row is all zero)
//   q_mi  = rint(x_mi · S_m) ∈ [−32639, 32639]        (15 bits and sign)
//   q_mi  = 256·hi_mi + lo_mi,  lo = ((q + 128) mod 256) − 128,  hi, lo ∈ [−128, 127]
//   word (2m, i) = hi_mi in all four bytes, word (2m + 1, i) = lo_mi likewise
//   info: Σ_i q_mi (int, exact: |Σ| ≤ 16384 · 32639 < 2^31) and 1/S_m
//         (NaN when the row holds a NaN or an infinity: its outputs are NaN).
// So Σ_i bytes(h_ri)·word(2m, i) = Σ_i (y_ri + 510)·hi_mi on the tensor core,
// and 256·D(2m) + D(2m+1) − 510·Σ_i q_mi = Σ_i y_ri·q_mi exactly (in int64).
//
// Layout: operand row n (= 2m + part) starts at word n·stride, stride ≡ 16
// (mod 32) words; column c = 128·b + 32·q + j (half block b, lane q's run,
// position j) sits at word 128·b + 16·(j/4) + 4·q + j%4, so a lane's four
// words for positions 4s'..4s'+3 of its run are one 16-byte load, and the 8
// lanes of a quarter warp (rows n, n+1 × q = 0..3) hit 32 distinct banks.
//
// Every block of a launch computes the same bits (fixed thread→group mapping
// and reduction order). Needs M ≤ warps of the block; ends with a barrier.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "stage_smem.cuh"

namespace trellis::cuda::detail {

inline constexpr float kFixedMax = 32639.0f;  // |q| bound that keeps hi within int8

// The word index of column c in an operand row.
__device__ __forceinline__ int byte_operand_word(int c) {
  return (c & ~127) | (((c & 31) >> 2) << 4) | (((c >> 5) & 3) << 2) | (c & 3);
}

// x: [M][cols] bf16 (cols a multiple of 256). words: 2M operand rows of
// `stride` words. info_sum[m] = Σ q_m, info_unscale[m] = 1/S_m.
__device__ void stage_bytes_block(const __nv_bfloat16* x, int cols, int M, uint32_t* words, int stride,
                                  int* info_sum, float* info_unscale, float* scratch) {
  using stage_impl::group_values;
  using stage_impl::load_raw;
  using stage_impl::reduce_row;
  const StageSlice slice{x, cols, 0, cols, cols, M, nullptr};
  const int groups = cols / 8, per_row = int(blockDim.x) / M;
  const int m = int(threadIdx.x) % M, first = int(threadIdx.x) / M;
  const int end = first < per_row ? groups : 0;  // threads past M·per_row only join the reductions
  const bool vec = (cols % 8 == 0) && ((reinterpret_cast<uintptr_t>(x) & 15) == 0);
  float amax = 0.0f;
#pragma unroll 4
  for (int j = first; j < end; j += per_row) {
    float v[8];
    group_values(slice, j, load_raw(slice, m, j, vec), v);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      // A NaN or infinity makes the max infinite (fmaxf alone would drop a NaN).
      const float a = fabsf(v[e]);
      amax = a <= 3.0e38f ? fmaxf(amax, a) : INFINITY;
    }
  }
  amax = reduce_row<true>(amax, M, scratch);
  const bool usable = amax > 0.0f && isfinite(amax);
  const float scale = usable ? kFixedMax / amax : 1.0f;
  // A row with a NaN or infinity gets NaN outputs, as the float paths would.
  if (first == 0) info_unscale[m] = usable ? amax / kFixedMax : isfinite(amax) ? 1.0f : NAN;
  uint32_t* hi_row = words + size_t(2 * m) * stride;
  uint32_t* lo_row = hi_row + stride;
  int sum = 0;
#pragma unroll 2
  for (int j = first; j < end; j += per_row) {
    float v[8];
    group_values(slice, j, load_raw(slice, m, j, vec), v);
    uint32_t hi[8], lo[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int qv = __float2int_rn(v[e] * scale);
      const int l = ((qv + 128) & 255) - 128;
      sum += qv;
      hi[e] = (uint32_t((qv - l) >> 8) & 255u) * 0x01010101u;
      lo[e] = (uint32_t(l) & 255u) * 0x01010101u;
    }
    // Columns 8j..8j+7 lie in one lane run: two 4-word units each.
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int at = byte_operand_word(8 * j + 4 * u);
      *reinterpret_cast<uint4*>(hi_row + at) = make_uint4(hi[4 * u], hi[4 * u + 1], hi[4 * u + 2], hi[4 * u + 3]);
      *reinterpret_cast<uint4*>(lo_row + at) = make_uint4(lo[4 * u], lo[4 * u + 1], lo[4 * u + 2], lo[4 * u + 3]);
    }
  }
  sum = reduce_row<false>(sum, M, scratch);
  if (first == 0) info_sum[m] = sum;
  __syncthreads();
}

}  // namespace trellis::cuda::detail
