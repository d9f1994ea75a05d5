// Tensor-core form, axis 0 ("down"), fp16 operands: y = W x with Wᵀ stored
// coded along the output dim (row-major or k3 block-pair interleaved), 1..8
// activation rows. (The integer form, imma, is imma_axis0.cu.)
//
// Math (numerics "factored", f_r folded into the activation): with stored
// rows r (input features) and columns c (outputs), per row segment S,
//   D_cm = Σ_{r∈S} (y_rc + 1534) · xf_mr,   xf_mr = fp16(x_mr · f_r · 2^E_mS)
//   out_mc = Σ_S (D_cm − 1534·Σ_{r∈S} xf_mr) · 2^−E_mS.
// Each block stages its segment's xf in shared memory first (stage_smem.cuh),
// with its own exponent E_mS, so no separate staging launch is needed.
// The MMA's M dimension is the output column c and its K dimension the stored
// row r, so A pairs are (r, r+1) at one c. A warp covers one half (128
// columns) of a 256-column block: lane (g, q) decodes the 16-position run at
// column 16g of the half for four stored rows (2q, 2q+1, 2q+8, 2q+9 of a
// 16-row slab) and packs same-position values of row pairs. MMA t of a slab
// (t = 0..7) takes run positions t and t+8: A row i ↔ column 16i + t and
// row i+8 ↔ column 16i + 8 + t (i < 8), so 8 independent accumulator tiles
// cover the half with no shared-memory transpose. A lane's words for a slab
// are 4 runs of at most 3 words: the next slab's are loaded into registers
// while one decodes, and the slab after that is prefetched to L2.
// B is the staged xf of the slab's 16 rows (two registers per lane per slab;
// staged rows are padded to 8 mod 64 halves, so the 32 lanes' words fall in
// 32 different banks).
//
// Launch: grid = column blocks × row segments; a block's 8 warps are two
// halves of 4, each 4 splitting the segment's slabs for its half block; the
// block sums each column's 4 warp tiles through shared memory in warp order,
// and the last-arriving block of a column block sums the segments in order
// (split_k.cuh, finish_segments): deterministic. M range 1..8; T = 256; rows
// a multiple of 8.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "axis0_call.cuh"
#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "stage_smem.cuh"
#include "trellis/error.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::cuda::detail {
namespace {

struct Axis0Args {
  TrellisGeometry geom;
  const uint32_t* codes;
  const __half* scales;
  const __nv_bfloat16* x;  // [M][rows]
  int M, xf_stride;        // staged row stride (halves)
  uint32_t mask;           // 2^L − 1
  int segments, slabs_per_segment;
  float* partials;  // [segments][cols][M]
  unsigned* counters;
  __nv_bfloat16* out;  // [M][cols]
  ResidualNormWrite residual;  // M = 1: a residual-norm producer (finish_segments)
};

// Where the 16-position run starting at position t0 of a block lies: its
// words (block-relative, wrapped) and the funnel shift that normalises them,
// after which position t0+j is the L-bit window at bit (15−j)·k of w[0..].
template <int K>
struct Run16 {
  // Bits needed: shift (<= 16) + 15k + L (<= 16).
  static constexpr int kWords = (32 + 15 * K + 31) / 32;
  int word[kWords];  // word indices within the block (wrapped)
  int shift;         // bit offset of the run's first bit in word[0]: 0, or 16 when k = 3
};

template <int K>
__device__ __forceinline__ Run16<K> run16_at(int t0) {
  constexpr int wpb = kBlockT * K / 32;
  Run16<K> r;
  const int bit = (kBlockT - 16 - t0) * K;
  r.shift = bit & 31;
#pragma unroll
  for (int i = 0; i < Run16<K>::kWords; ++i) {
    int w = (bit >> 5) + i;
    r.word[i] = w >= wpb ? w - wpb : w;
  }
  return r;
}

// Window of position j (0..15) of a normalised 16-run, before the mask.
template <int K, int N>
__device__ __forceinline__ uint32_t run16_window(const uint32_t (&w)[N], int j) {
  const int bit = (15 - j) * K;
  const int wi = bit >> 5, off = bit & 31;
  return off == 0 ? w[wi] : __funnelshift_r(w[wi], w[wi + 1], off);
}

template <int K>
__global__ void __launch_bounds__(kMmaThreads, kMmaMinBlocksPerSm) mma_axis0_kernel(const Axis0Args a) {
  allow_dependent_grids();
  extern __shared__ float warp_sums[];  // [kMmaWarps][kAxis0WarpCols][M], then info, scratch, the staged operand
  constexpr int NW = Run16<K>::kWords;
  constexpr int kHalfCols = kAxis0WarpCols, kWarpsPerHalf = kMmaWarps / 2;
  static_assert(2 * kHalfCols == kBlockT, "a warp covers half a block");
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, warp = threadIdx.x >> 5;
  const int half = warp / kWarpsPerHalf, wh = warp % kWarpsPerHalf;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols);
  constexpr int wpb = kBlockT * K / 32;
  const int nslabs = (R + kSlabRows - 1) / kSlabRows;
  const int cb = blockIdx.x, seg = blockIdx.y;
  const int row_stride = G.block_interleave == 2 ? 2 * wpb : int(G.blocks_per_row()) * wpb;
  const uint32_t* block_base = a.codes + G.block_offset(0, cb);
  const Run16<K> at = run16_at<K>(kHalfCols * half + 16 * g);
  const int sbeg_seg = seg * a.slabs_per_segment, send_seg = min(nslabs, sbeg_seg + a.slabs_per_segment);
  const int M = a.M;  // also the block sums' values per column
  float* info = warp_sums + kMmaWarps * kHalfCols * M;
  float* scratch = info + 2 * kMmaMaxM;
  void* operand = scratch + stage_scratch_floats(kMmaThreads);
  // This warp's slabs: an equal share of the segment among its half's warps.
  const int per_warp = (send_seg - sbeg_seg + kWarpsPerHalf - 1) / kWarpsPerHalf;
  const int sbeg = sbeg_seg + wh * per_warp, send = min(send_seg, sbeg + per_warp);
  // Rows 2q, 2q+1, 2q+8, 2q+9 of the slab.
  const auto in_slab = [&](int i) { return 2 * q + (i & 1) + 8 * (i >> 1); };
  // run[i]: the first word of row i's run in the slab being loaded. Only the
  // last word of the run at t0 = 0 wraps to the block's start, so the words
  // are run[i][0..NW-2] and run[i][last]. Rows past R keep the last row in
  // range (the staged x is zero there).
  const size_t step = size_t(kSlabRows) * row_stride;
  const int last = at.word[NW - 1] - at.word[0];
  const uint32_t* run[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) run[i] = block_base + size_t(min(sbeg * kSlabRows + in_slab(i), R - 1)) * row_stride + at.word[0];
  const auto load_slab = [&](uint32_t(&dst)[4][NW]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j + 1 < NW; ++j) dst[i][j] = __ldg(run[i] + j);
      dst[i][NW - 1] = __ldg(run[i] + last);
    }
  };
  const auto advance_to = [&](int sl) {
    const bool whole = (sl + 1) * kSlabRows <= R;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (whole || sl * kSlabRows + in_slab(i) < R) run[i] += step;
  };

  // The first slab's words are in flight while the block stages x. Programmatic
  // launch: only code words (weights, which no earlier kernel writes) are read
  // before the wait; x, the split scratch and out come after it, in every warp.
  uint32_t next[4][NW];
  if (sbeg < send) load_slab(next);
  wait_for_prerequisite_grids();
  const int row0 = sbeg_seg * kSlabRows;
  const StageSlice slice{a.x, R, row0, min(R, send_seg * kSlabRows) - row0, (send_seg - sbeg_seg) * kSlabRows, M,
                         a.scales};
  __half* xf = static_cast<__half*>(operand);
  stage_block(slice, xf, a.xf_stride, info, scratch, [](int j) { return j; });
  const bool has_x = g < M;
  const uint32_t* xrow = reinterpret_cast<const uint32_t*>(xf + size_t(has_x ? g : 0) * a.xf_stride) + q;  // pair words

  float acc[8][4];
#pragma unroll
  for (int t = 0; t < 8; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  for (int sl = sbeg; sl < send; ++sl) {
    uint32_t w[4][NW];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < NW; ++j) w[i][j] = next[i][j];
      if constexpr (K == 3) {  // 16 positions are 48 bits: every other run starts mid-word
#pragma unroll
        for (int j = 0; j + 1 < NW; ++j) w[i][j] = __funnelshift_r(w[i][j], w[i][j + 1], at.shift);
      }
    }
    // The next slab's words load into registers while this one decodes; the
    // one after heads for L2.
    if (sl + 1 < send) {
      advance_to(sl + 1);
      load_slab(next);
      if (sl + 2 < send && (sl + 3) * kSlabRows <= R) {
#pragma unroll
        for (int i = 0; i < 4; ++i) prefetch_l2(run[i] + step);
      }
    }
    const uint32_t* xs = xrow + (sl - sbeg_seg) * (kSlabRows / 2);
    const uint32_t b0 = has_x ? xs[0] : 0u, b1 = has_x ? xs[4] : 0u;
    auto pair = [&](const uint32_t(&lo)[NW], const uint32_t(&hi)[NW], int t) {
      return pack_halves(biased_code_half(run16_window<K>(lo, t) & a.mask),
                         biased_code_half(run16_window<K>(hi, t) & a.mask));
    };
#pragma unroll
    for (int t = 0; t < 8; ++t)
      // a0/a1: rows (2q, 2q+1) at run positions t / t+8; a2/a3: rows (2q+8, 2q+9).
      mma_f16_16816(acc[t], pair(w[0], w[1], t), pair(w[0], w[1], t + 8), pair(w[2], w[3], t),
                    pair(w[2], w[3], t + 8), b0, b1);
  }

  // acc[t][e]: column 16g + t + 8·(e >= 2) of the warp's half block, activation row 2q + (e & 1).
  float* mine = warp_sums + size_t(warp) * kHalfCols * M;
#pragma unroll
  for (int t = 0; t < 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = 16 * g + t + (e >= 2 ? 8 : 0), col = 2 * q + (e & 1);
      if (col < M) mine[c * M + col] = acc[t][e];
    }
  __syncthreads();
  // Block sum of each column over its half's warps in warp order, in real
  // units (this segment's exponent undone), then across segments in segment order.
  const int n = kBlockT * M;
  float vals[kMmaMaxM];  // n / blockDim <= kMmaMaxM values per thread, written after every read
#pragma unroll
  for (int u = 0; u < kMmaMaxM; ++u) {
    const int i = int(threadIdx.x) + u * int(blockDim.x);
    if (i >= n) break;
    const int c = i / M, m = i - c * M;
    const size_t first = (size_t(c / kHalfCols) * kWarpsPerHalf * kHalfCols + c % kHalfCols) * M;
    const size_t step = size_t(kHalfCols) * M;  // the next warp's entry of the column
    float s = 0.0f;
    for (int wv = 0; wv < kWarpsPerHalf; ++wv) s += warp_sums[first + wv * step + m];
    vals[u] = (s - kHalfBias * info[2 * m]) * info[2 * m + 1];
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kMmaMaxM; ++u) {
    const int i = int(threadIdx.x) + u * int(blockDim.x);
    if (i >= n) break;
    warp_sums[i] = vals[u];
  }
  __syncthreads();
  finish_segments<true>(warp_sums, M, C, cb * kBlockT, seg, a.segments, a.partials, a.counters + cb, a.out, a.residual);
}

template <int K>
void launch(const Axis0Args& a, dim3 grid, int smem_bytes, cudaStream_t stream) {
  // 8 KB of block sums per sum column plus the staged segment: past 48 KB
  // the kernel needs the opt-in, raised once to the largest plan's size.
  static const cudaError_t raised = cudaFuncSetAttribute(
      mma_axis0_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, axis0_smem_bytes(kMmaMaxM, kAxis0StageBytes));
  if (raised != cudaSuccess) throw Error(std::string("mma axis-0 form: shared-memory opt-in failed: ") +
                                         cudaGetErrorString(raised));
  launch_programmatic(mma_axis0_kernel<K>, grid, kMmaThreads, smem_bytes, stream, a);
}

// The launcher of the instance for k (nullptr outside 2..4).
auto axis0_instance(int k) -> decltype(&launch<2>) {
  switch (k) {
    case 2: return &launch<2>;
    case 3: return &launch<3>;
    case 4: return &launch<4>;
    default: return nullptr;
  }
}

}  // namespace

MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count) {
  MmaAxis0Plan p{};
  // Segments a half block's 4 warps share, few enough rows that the staged
  // activations fit (M halves per row, the stride padded by 8 halves).
  const int max_slabs = std::max(1, (kAxis0StageBytes / (2 * M) - 8) / kSlabRows / 4 * 4);
  p.split = plan_axis0_segments(g, M, sm_count, int((g.rows + kSlabRows - 1) / kSlabRows), max_slabs, kMmaWarps / 2);
  const int seg_rows = p.split.slabs_per_segment * kSlabRows;
  p.xf_stride = (seg_rows + 63) / 64 * 64 + 8;
  p.smem_bytes = axis0_smem_bytes(M, M * p.xf_stride * 2);
  return p;
}

void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                      SplitScratch scratch, cudaStream_t stream, const ResidualNormWrite& residual) {
  Axis0Args a{};
  set_axis0_call(a, w, x, M, out, plan.split, scratch, residual);
  a.xf_stride = plan.xf_stride;
  a.mask = state_cut(w.geom.L).mask;
  const dim3 grid(plan.split.col_tiles, plan.split.segments);
  const int k = w.geom.k;
  const auto f = axis0_instance(k);
  if (!f) throw Error("mma axis-0 form: no kernel for k=" + std::to_string(k));
  f(a, grid, plan.smem_bytes, stream);
}

}  // namespace trellis::cuda::detail
