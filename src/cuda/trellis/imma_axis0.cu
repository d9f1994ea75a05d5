// Integer tensor-core form, axis 0 ("down", numerics "factored"): y = W x with
// Wᵀ stored coded along the output dim (row-major or k3 block-pair
// interleaved), 1..4 activation rows, on mma.sync m16n8k32 (u8 × s8 → s32).
//
// Math: a block stages its row segment S of x·f (f_r folded in) as 15-bit
// fixed point in two int8 halves (stage_bytes.cuh: operand column n = 2m + half,
// scale S_mS = 32639 / max |x_m·f| over S), and with h_rc the 1MAD hash of
// stored row r, column c (its four bytes sum to y_rc + 510):
//   D_cn   = Σ_{r∈S} Σ_i byte_i(h_rc) · word_n(r)                  (exact int32)
//   out_mc = Σ_S (256·D_c,2m + D_c,2m+1 − 510·Σ_{r∈S} q_mr) / S_mS  (fp32, S in order)
// The MMA's M dimension is the output column, its K the four hash bytes of
// 8 stored rows. A warp covers a whole 256-column block: lane (g, q) decodes
// the 32-position run at column 32g of stored rows 2q and 2q + 1 of an 8-row
// slab (the axis-1 run decode, run_decode.cuh: k + 1 words, every shift a
// constant), and MMA t (t = 0..15) takes run positions t and t + 16:
//   A row i ↔ column 32i + t, row i + 8 ↔ column 32i + 16 + t,
//   K slots 4q..4q+3 ↔ stored row 2q, 16 + 4q.. ↔ row 2q + 1,
// so 16 independent accumulator tiles cover the block, and a lane's B
// fragment (rows 2q, 2q + 1 of operand column g) is one 8-byte load: the
// staged words are in row order (stored four at a time), and the operand
// row stride ≡ 8 (mod 32) words keeps each half warp on 32 distinct banks.
// Per slab a lane loads its two runs (one vector load and one word each at
// k = 2 and 4; four words at k = 3, whose 32-position runs are word aligned)
// into registers while the previous slab decodes, prefetches the slab after
// that to L2, and issues 16 MMAs for 64 weights. Against 16-position runs of
// 16-row slabs this halves the loads, pointer updates and prefetches per
// weight and drops the k = 3 run normalisation.
//
// Launch: grid = column blocks × row segments, 8 warps per block, two blocks
// per SM; each warp an equal contiguous share of the segment's slabs. The
// warps add their tiles into the block's int32 column sums in shared memory
// (integer sums: the order does not matter), one thread per (column, row)
// turns them into real units with the segment's scale, and the last-arriving
// block of a column block sums the segments in order (split_k.cuh,
// finish_segments): deterministic. Rows a multiple of 8 (every slab whole),
// T = 256; a segment holds at most 4032 rows, so |D| < 4032·1020·128 < 2^31.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "axis0_call.cuh"
#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "stage_bytes.cuh"
#include "trellis/error.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::cuda::detail {
namespace {

struct ImmaAxis0Args {
  TrellisGeometry geom;
  const uint32_t* codes;
  const __half* scales;
  const __nv_bfloat16* x;  // [M][rows]
  int M, x_stride;         // staged words per operand row
  StateCut cut;
  int segments, slabs_per_segment;
  float* partials;     // [segments][cols][M]
  unsigned* counters;  // one per column block
  __nv_bfloat16* out;  // [M][cols]
  ResidualNormWrite residual;  // M = 1: a residual-norm producer (finish_segments)
};

// Segment row r → staged word r, so a group's words go out as 16-byte stores (stage_bytes.cuh).
struct RowOrderSlot {
  static constexpr bool kQuads = true;
  __device__ __forceinline__ int operator()(int r) const { return r; }
};

// Column c's entry in the block sums: one spare entry per 32 columns, so the
// 8 lanes of a warp that hold columns 32g + t (g = 0..7) add into different banks.
__device__ __forceinline__ int sum_slot(int c) { return c + (c >> 5); }

// kL: 0 for any L, else the geometry's L (states cut by the step where they can: run_decode.cuh).
template <int K, int kL>
__global__ void __launch_bounds__(kMmaThreads, kMmaMinBlocksPerSm) imma_axis0_kernel(const ImmaAxis0Args a) {
  allow_dependent_grids();
  extern __shared__ int block_sums[];  // [kImmaAxis0SumSlots][2M], then values, info, scratch, the staged operand
  constexpr int D = step_positions(kL, K);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, warp = threadIdx.x >> 5;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols), M = a.M, pc = 2 * M;
  constexpr int wpb = kBlockT * K / 32;
  const StateCut cut = a.cut;
  const int cb = blockIdx.x, seg = blockIdx.y;
  const int nslabs = R / kImmaAxis0SlabRows;
  const int sbeg_seg = seg * a.slabs_per_segment, send_seg = min(nslabs, sbeg_seg + a.slabs_per_segment);
  const int per_warp = (send_seg - sbeg_seg + kMmaWarps - 1) / kMmaWarps;
  const int sbeg = min(send_seg, sbeg_seg + warp * per_warp), send = min(send_seg, sbeg + per_warp);
  float* values = reinterpret_cast<float*>(block_sums + kImmaAxis0SumSlots * pc);  // [kBlockT][M]
  float* info = values + kBlockT * M;
  float* scratch = info + 2 * kMmaMaxM;
  uint32_t* words = reinterpret_cast<uint32_t*>(scratch + stage_scratch_floats(kMmaThreads));

  // The lane's runs: column 32g of the block, stored rows 2q and 2q + 1 of the slab.
  const int row_stride = G.block_interleave == 2 ? 2 * wpb : int(G.blocks_per_row()) * wpb;
  const size_t step = size_t(kImmaAxis0SlabRows) * row_stride;
  const bool wraps = g == 0;  // the run at t0 = 0: its last word is the block's first
  const uint32_t* run0 = a.codes + G.block_offset(0, cb) + run_first_word(kBlockT, K, 32 * g) +
                         size_t(sbeg * kImmaAxis0SlabRows + 2 * q) * row_stride;
  const uint32_t* run1 = run0 + row_stride;
  uint32_t next0[K + 1], next1[K + 1];

  // The first slab's words are in flight while the block stages x. Programmatic
  // launch: only code words (weights, which no earlier kernel writes) are read
  // before the wait; x, the split scratch and out come after it, in every warp.
  if (sbeg < send) load_block_run<K>(run0, wraps, next0), load_block_run<K>(run1, wraps, next1);
  wait_for_prerequisite_grids();
  for (int i = threadIdx.x; i < kImmaAxis0SumSlots * pc; i += blockDim.x) block_sums[i] = 0;
  const int row0 = sbeg_seg * kImmaAxis0SlabRows, seg_rows = (send_seg - sbeg_seg) * kImmaAxis0SlabRows;
  stage_bytes_block(StageSlice{a.x, R, row0, seg_rows, seg_rows, M, a.scales}, words, a.x_stride,
                    reinterpret_cast<int*>(info), info + kMmaMaxM, scratch, RowOrderSlot{});
  const bool has_x = g < pc;
  const uint32_t* xrow = words + size_t(has_x ? g : 0) * a.x_stride + 2 * q;

  int acc[16][4];
#pragma unroll
  for (int t = 0; t < 16; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0;
  for (int sl = sbeg; sl < send; ++sl) {
    uint32_t w0[K + 1], w1[K + 1];
#pragma unroll
    for (int i = 0; i <= K; ++i) w0[i] = next0[i], w1[i] = next1[i];
    // The next slab's words load into registers while this one decodes; the
    // one after heads for L2. At k = 3 without a branch (past the segment's
    // end the last slab's words load again), at k = 2 and 4 with one: ptxas
    // schedules the two differently, and each measured faster where it is
    // used (H100, bench/results/h100_norm_fusion_vs_main_ff7c2e5.txt: down
    // M = 1 k = 3 30.0 against 30.7 µs; k = 2 29.7 against 30.9, M = 4 41.7
    // against 46.3).
    if constexpr (K == 3) {
      const size_t next_step = sl + 1 < send ? step : 0, after_step = sl + 2 < send ? step : 0;
      run0 += next_step, run1 += next_step;
      load_block_run<K>(run0, wraps, next0), load_block_run<K>(run1, wraps, next1);
      prefetch_l2(run0 + after_step), prefetch_l2(run1 + after_step);
    } else if (sl + 1 < send) {
      run0 += step, run1 += step;
      load_block_run<K>(run0, wraps, next0), load_block_run<K>(run1, wraps, next1);
      if (sl + 2 < send) prefetch_l2(run0 + step), prefetch_l2(run1 + step);
    }
    const uint2 b = has_x ? *reinterpret_cast<const uint2*>(xrow + (sl - sbeg_seg) * kImmaAxis0SlabRows)
                          : make_uint2(0u, 0u);
#pragma unroll
    for (int t = 0; t < 16; ++t)
      // a0/a1: row 2q at run positions t / t + 16; a2/a3: row 2q + 1.
      mma_u8s8_16832(acc[t], run_hash<K, D>(w0, t, cut), run_hash<K, D>(w0, t + 16, cut), run_hash<K, D>(w1, t, cut),
                     run_hash<K, D>(w1, t + 16, cut), b.x, b.y);
  }

  // acc[t][e]: column 32g + t + 16·(e >= 2), operand column 2q + (e & 1); lanes q < M hold real columns.
  if (q < M) {
#pragma unroll
    for (int t = 0; t < 16; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 32 * g + t + (e >= 2 ? 16 : 0);
        atomicAdd(block_sums + sum_slot(c) * pc + 2 * q + (e & 1), acc[t][e]);
      }
  }
  __syncthreads();
  // One thread per (column, activation row): the segment's sum in real units.
  for (int i = threadIdx.x; i < kBlockT * M; i += blockDim.x) {
    const int c = i / M, m = i - c * M;
    const int* s = block_sums + sum_slot(c) * pc + 2 * m;
    const long long t = 256LL * s[0] + s[1] - (long long)kCodeBias * reinterpret_cast<const int*>(info)[m];
    values[i] = float(t) * info[kMmaMaxM + m];
  }
  __syncthreads();
  // The per-output sum: with it this kernel (the model's M = 1 down) keeps the
  // slab-loop schedule it was tuned and measured with; the batched sum moved
  // ptxas's schedule by −4 to +6 % (h100_axis0_segment_sum_experiment.txt).
  finish_segments<false>(values, M, C, cb * kBlockT, seg, a.segments, a.partials, a.counters + cb, a.out, a.residual);
}

// The most shared memory any plan asks for (M = 4 and a full staging budget).
constexpr int kMaxSmemBytes = imma_axis0_smem_bytes(4, 0) + kAxis0StageBytes;

template <int K, int kL>
void launch(const ImmaAxis0Args& a, dim3 grid, int smem_bytes, cudaStream_t stream) {
  static const cudaError_t raised = cudaFuncSetAttribute(
      imma_axis0_kernel<K, kL>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes);
  if (raised != cudaSuccess)
    throw Error(std::string("imma axis-0 form: shared-memory opt-in failed: ") + cudaGetErrorString(raised));
  launch_programmatic(imma_axis0_kernel<K, kL>, grid, kMmaThreads, smem_bytes, stream, a);
}

// The launcher of the instance for k (nullptr outside 2..4).
template <int kL>
auto instance(int k) -> decltype(&launch<2, kL>) {
  switch (k) {
    case 2: return &launch<2, kL>;
    case 3: return &launch<3, kL>;
    case 4: return &launch<4, kL>;
    default: return nullptr;
  }
}

}  // namespace

ImmaAxis0Plan plan_imma_axis0(const TrellisGeometry& g, int M, int sm_count) {
  ImmaAxis0Plan p{};
  // Segments the block's 8 warps share, short enough that their staged operand
  // (2M words per row, the stride padded by <= 39 words) fits kAxis0StageBytes.
  const int max_slabs =
      std::max(kMmaWarps, (kAxis0StageBytes / (8 * M) - 40) / kImmaAxis0SlabRows / kMmaWarps * kMmaWarps);
  p.split = plan_axis0_segments(g, M, sm_count, int(g.rows / kImmaAxis0SlabRows), max_slabs, kMmaWarps);
  const int seg_rows = p.split.slabs_per_segment * kImmaAxis0SlabRows;
  p.x_stride = (seg_rows + 31) / 32 * 32 + 8;
  p.smem_bytes = imma_axis0_smem_bytes(M, 2 * M * p.x_stride * 4);
  return p;
}

void launch_imma_axis0(const ImmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M,
                       uint16_t* out, SplitScratch scratch, cudaStream_t stream, const ResidualNormWrite& residual) {
  ImmaAxis0Args a{};
  set_axis0_call(a, w, x, M, out, plan.split, scratch, residual);
  a.x_stride = plan.x_stride;
  a.cut = state_cut(w.geom.L);
  const int k = w.geom.k;
  const auto f = for_state_cut(w.geom.L, [&](auto kl) { return instance<decltype(kl)::value>(k); });
  if (!f) throw Error("imma axis-0 form: no kernel for k=" + std::to_string(k));
  f(a, dim3(plan.split.col_tiles, plan.split.segments), plan.smem_bytes, stream);
}

}  // namespace trellis::cuda::detail
