// Activation staging for the integer tensor-core form (imma): x as the int8 B
// operand of m16n8k32 MMAs whose A operand is the four bytes of each weight's
// 1MAD hash, so the tensor core forms the byte sum. Axis 1 stages all of x;
// axis 0 its block's row segment, with the row factors folded in.
//
// For each activation row m < M over the slice's n values v_i (= x_mi, or
// x_mi·f_i when folding):
//   S_m   = 32639 / max_i |v_i|   (1 when the row is all zero)
//   q_mi  = rint(v_i · S_m) ∈ [−32639, 32639]        (15 bits and sign)
//   q_mi  = 256·hi_mi + lo_mi,  lo = ((q + 128) mod 256) − 128,  hi, lo ∈ [−128, 127]
//   word (2m, slot(i)) = hi_mi in all four bytes, word (2m + 1, slot(i)) = lo_mi
//   (zero words for n ≤ i < n_pad)
//   info: Σ_i q_mi (int, exact: |Σ| ≤ 16384 · 32639 < 2^31) and 1/S_m
//         (NaN when the row holds a NaN or an infinity: its outputs are NaN).
// So Σ_i bytes(h_i)·word(2m, i) = Σ_i (y_i + 510)·hi_mi on the tensor core,
// and 256·D(2m) + D(2m+1) − 510·Σ_i q_mi = Σ_i y_i·q_mi exactly (in int64).
// Operand row n (= 2m + part) starts at word n·stride; the kernels pick the
// slot order and stride that keep their fragment loads free of bank conflicts.
//
// A residual-norm reader (scale.partials, M = 1; residual_norm.cuh) folds
// its s into the row's unscale: info 1/S·s, so every output is scaled by s.
// Every block of a launch computes the same bits (fixed thread→group mapping
// and reduction order), so blocks that stage the same slice agree exactly.
// Needs M ≤ warps of the block; scratch holds stage_scratch_floats(threads)
// (8-byte aligned); ends with a barrier.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "residual_norm.cuh"
#include "stage_smem.cuh"

namespace trellis::cuda::detail {

inline constexpr float kFixedMax = 32639.0f;  // |q| bound that keeps hi within int8

__device__ __forceinline__ uint32_t replicated_byte(int v) { return (uint32_t(v) & 255u) * 0x01010101u; }

// A Slot whose `kQuads` is true maps every 4 consecutive columns 4c..4c+3 to 4
// consecutive words, the first 16-byte aligned: a group's words then go to
// shared memory as four 16-byte stores instead of sixteen 4-byte ones.
template <typename Slot, typename = void>
struct SlotQuads : std::false_type {};
template <typename Slot>
struct SlotQuads<Slot, std::void_t<decltype(Slot::kQuads)>> : std::bool_constant<Slot::kQuads> {};

template <typename Slot>
__device__ void stage_bytes_block(const StageSlice& s, uint32_t* words, int stride, int* info_sum, float* info_unscale,
                                  float* scratch, Slot slot, const NormScale& scale = {}) {
  using stage_impl::group_values;
  using stage_impl::load_raw;
  using stage_impl::reduce_row;
  const int groups = s.n_pad / 8, per_row = int(blockDim.x) / s.M;
  const int m = int(threadIdx.x) % s.M, first = int(threadIdx.x) / s.M;
  const int end = first < per_row ? groups : 0;  // threads past M·per_row only join the reductions
  const bool vec = (s.x_stride % 8 == 0) && (s.col0 % 8 == 0) && ((reinterpret_cast<uintptr_t>(s.x) & 15) == 0);
  float amax = 0.0f;
  const auto take_max = [&](int j, uint4 raw) {
    float v[8];
    group_values(s, j, raw, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      // A NaN or infinity makes the max infinite (fmaxf alone would drop a NaN).
      const float a = fabsf(v[e]);
      amax = a <= 3.0e38f ? fmaxf(amax, a) : INFINITY;
    }
  };
  // The thread's first group stays in registers from the max to the
  // conversion (at M = 1 and 640 threads a 5120-column x is one group each).
  uint4 held;
  if (first < end) held = load_raw(s, m, first, vec);
  const bool scaled = scale.partials != nullptr;
  double* norm_sums = reinterpret_cast<double*>(scratch + 2 * (int(blockDim.x) >> 5) * kMmaMaxM);
  if (scaled) {
    const double share = warp_sum_f64(norm_partials_share(scale, int(threadIdx.x), int(blockDim.x)));
    if ((threadIdx.x & 31) == 0) norm_sums[threadIdx.x >> 5] = share;  // published by the max's barrier
  }
  if (first < end) take_max(first, held);
#pragma unroll 4
  for (int j = first + per_row; j < end; j += per_row) take_max(j, load_raw(s, m, j, vec));
  amax = reduce_row<true>(amax, s.M, scratch, 0);
  const bool usable = amax > 0.0f && isfinite(amax);
  const float to_fixed = usable ? kFixedMax / amax : 1.0f;
  if (first == 0) info_unscale[m] = usable ? amax / kFixedMax : isfinite(amax) ? 1.0f : NAN;
  uint32_t* hi_row = words + size_t(2 * m) * stride;
  uint32_t* lo_row = hi_row + stride;
  int sum = 0;
  const auto convert = [&](int j, uint4 raw) {
    float v[8];
    group_values(s, j, raw, v);  // zeros past n
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // columns 8j + 4h .. 8j + 4h + 3
      uint32_t hi[4], lo[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qv = __float2int_rn(v[4 * h + e] * to_fixed);
        const int l = ((qv + 128) & 255) - 128;
        sum += qv;
        hi[e] = replicated_byte((qv - l) >> 8);
        lo[e] = replicated_byte(l);
      }
      if constexpr (SlotQuads<Slot>::value) {
        const int at = slot(8 * j + 4 * h);
        *reinterpret_cast<uint4*>(hi_row + at) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
        *reinterpret_cast<uint4*>(lo_row + at) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int at = slot(8 * j + 4 * h + e);
          hi_row[at] = hi[e];
          lo_row[at] = lo[e];
        }
      }
    }
  };
  if (first < end) convert(first, held);
#pragma unroll 2
  for (int j = first + per_row; j < end; j += per_row) convert(j, load_raw(s, m, j, vec));
  if (first == 0 && scaled) {  // after the conversion, so the root overlaps the other warps' stores
    double total = 0.0;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) total += norm_sums[w];
    info_unscale[m] *= norm_scale_of(total, scale);
  }
  sum = reduce_row<false>(sum, s.M, scratch, 1);
  if (first == 0) info_sum[m] = sum;
  __syncthreads();
}

}  // namespace trellis::cuda::detail
