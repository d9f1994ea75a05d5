// Tensor-core form, axis 0 ("down"): y = W x with Wᵀ stored coded along the
// output dim (row-major or k3 block-pair interleaved), 1..8 activation rows.
//
// Math (numerics "factored", f_r folded into the activation): with stored
// rows r (input features) and columns c (outputs), per row segment S,
//   D_cm = Σ_{r∈S} (y_rc + 1534) · xf_mr,   xf_mr = fp16(x_mr · f_r · 2^E_mS)
//   out_mc = Σ_S (D_cm − 1534·Σ_{r∈S} xf_mr) · 2^−E_mS.
// Each block stages its segment's xf in shared memory first (stage_smem.cuh),
// with its own exponent E_mS, so no separate staging launch is needed.
// The MMA's M dimension is the output column c and its K dimension the stored
// row r, so A pairs are (r, r+1) at one c: each lane decodes 16-position runs
// of four stored rows (2q, 2q+1, 2q+8, 2q+9 of a 16-row slab) at two column
// offsets (16g and 128+16g of the block) and packs same-position values of
// row pairs. MMA t of a slab (t = 0..15) takes run position t: A row i ↔
// column 16i + t (i < 8) or 128 + 16(i−8) + t, so a warp covers one 256-column
// block with 16 independent accumulator tiles and no shared-memory transpose.
// B is the staged xf of the slab's 16 rows (two registers per lane per slab;
// staged rows are padded to 8 mod 64 halves, so the 32 lanes' words fall in
// 32 different banks).
//
// Launch: grid = column blocks × row segments; a block's 8 warps split its
// segment's slabs, sum their tiles through shared memory in warp order, and
// the last-arriving block of a column block sums the segments in order
// (split_k.cuh): deterministic. M range 1..8; T = 256; rows a multiple of 8.
//
// Integer operands (form imma, M 1..4): m16n8k32 with A = the four hash bytes
// of each weight and B = the segment's x·f as 15-bit fixed point in two int8
// halves (stage_bytes.cuh; operand column 2m + half), so the tensor core forms
// the byte sum and accumulates exactly in int32. K slot q ↔ stored row q + 4i
// of the slab for MMA i = 0, 1 (slots q, q+4 ↔ rows q, q+4 and q+8, q+12): each
// lane decodes rows q, q+4, q+8, q+12 at the same two column offsets, two MMAs
// per run position. Block sums stay integer (exact) until the segment's
//   (256·D_hi + D_lo − 510·Σ_r q_mr) · (1/S_mS)
// turns them into real units.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "stage_bytes.cuh"
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
  int M, xf_stride;        // staged row stride: halves (fp16 operands) or words (byte operands)
  int segments, slabs_per_segment;
  float* partials;  // [segments][cols][M]
  unsigned* counters;
  __nv_bfloat16* out;  // [M][cols]
};

// Words of a 16-position run starting at position t0 of a block, normalised
// so that position t0+j is the L-bit window at bit (15−j)·k of w[0..].
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

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

template <int K>
__device__ __forceinline__ void load_run16(const uint32_t* __restrict__ block, const Run16<K>& at,
                                           uint32_t (&w)[Run16<K>::kWords]) {
#pragma unroll
  for (int i = 0; i < Run16<K>::kWords; ++i) w[i] = __ldg(block + at.word[i]);
  if constexpr (K == 3) {  // 16 positions are 48 bits: every other run starts mid-word
#pragma unroll
    for (int i = 0; i + 1 < Run16<K>::kWords; ++i) w[i] = __funnelshift_r(w[i], w[i + 1], at.shift);
  }
}

// State of position j (0..15) of a normalised 16-run.
template <int K, int N>
__device__ __forceinline__ uint32_t run16_state(const uint32_t (&w)[N], int j, uint32_t mask) {
  const int bit = (15 - j) * K;
  const int wi = bit >> 5, off = bit & 31;
  const uint32_t win = off == 0 ? w[wi] : __funnelshift_r(w[wi], w[wi + 1], off);
  return win & mask;
}

// Byte operands: slab row q + 4u (q, u = 0..3) at word 4q + u of the slab's
// 16, so a lane's four rows are one 16-byte load; with the row stride ≡ 16
// (mod 32) words, a quarter warp (operand rows n, n+1 × q = 0..3) hits 32 banks.
struct Axis0ByteSlot {
  __device__ __forceinline__ int operator()(int i) const { return (i & ~15) | ((i & 3) << 2) | ((i >> 2) & 3); }
};

template <bool kInt, int K>
__global__ void __launch_bounds__(kMmaThreads, kMmaMinBlocksPerSm) mma_axis0_kernel(const Axis0Args a) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  using Acc = std::conditional_t<kInt, int, float>;
  extern __shared__ float warp_sums[];  // [kMmaWarps][256][sum_cols], then info, scratch, the staged operand
  constexpr int NW = Run16<K>::kWords;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, warp = threadIdx.x >> 5;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols);
  constexpr int wpb = kBlockT * K / 32;
  const uint32_t mask = (1u << G.L) - 1u;
  const int nslabs = (R + kSlabRows - 1) / kSlabRows;
  const int cb = blockIdx.x, seg = blockIdx.y;
  const int row_stride = G.block_interleave == 2 ? 2 * wpb : int(G.blocks_per_row()) * wpb;
  const uint32_t* block_base = a.codes + G.block_offset(0, cb);
  const Run16<K> at0 = run16_at<K>(16 * g), at1 = run16_at<K>(128 + 16 * g);
  const int sbeg_seg = seg * a.slabs_per_segment, send_seg = min(nslabs, sbeg_seg + a.slabs_per_segment);
  const int sum_cols = kInt ? 2 * a.M : a.M;  // per column of the block sums: operand columns or rows
  float* info = warp_sums + kMmaWarps * kBlockT * sum_cols;
  float* scratch = info + 2 * kMmaMaxM;
  void* operand = scratch + stage_scratch_floats(kMmaThreads);
  const int row0 = sbeg_seg * kSlabRows;
  const StageSlice slice{a.x, R, row0, min(R, send_seg * kSlabRows) - row0, (send_seg - sbeg_seg) * kSlabRows, a.M,
                         a.scales};
  bool has_x;
  const uint32_t* xrow;  // fp16: the lane's pair words; bytes: its 16-byte group of 4 rows per slab
  if constexpr (kInt) {
    uint32_t* words = static_cast<uint32_t*>(operand);
    stage_bytes_block(slice, words, a.xf_stride, reinterpret_cast<int*>(info), info + kMmaMaxM, scratch,
                      Axis0ByteSlot{});
    has_x = g < 2 * a.M;
    xrow = words + size_t(has_x ? g : 0) * a.xf_stride + 4 * q;
  } else {
    __half* xf = static_cast<__half*>(operand);
    stage_block(slice, xf, a.xf_stride, info, scratch, [](int j) { return j; });
    has_x = g < a.M;
    xrow = reinterpret_cast<const uint32_t*>(xf + size_t(has_x ? g : 0) * a.xf_stride) + q;
  }

  // This warp's slabs: an equal share of the block's segment.
  const int per_warp = (send_seg - sbeg_seg + kMmaWarps - 1) / kMmaWarps;
  const int sbeg = sbeg_seg + warp * per_warp, send = min(send_seg, sbeg + per_warp);

  Acc acc[16][4];
#pragma unroll
  for (int t = 0; t < 16; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = Acc(0);
  for (int sl = sbeg; sl < send; ++sl) {
    // fp16: rows 2q, 2q+1, 2q+8, 2q+9 of the slab; bytes: rows q, q+4, q+8, q+12; each at both column offsets.
    uint32_t w[4][2][NW];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int in_slab = kInt ? q + 4 * i : 2 * q + (i & 1) + 8 * (i >> 1);
      const int r = min(sl * kSlabRows + in_slab, R - 1);
      const uint32_t* row = block_base + r * row_stride;
      load_run16<K>(row, at0, w[i][0]);
      load_run16<K>(row, at1, w[i][1]);
      // The next slab's runs head for L2 while this one decodes (no registers held).
      if (sl + 1 < send) {
        const uint32_t* next = block_base + min(r + kSlabRows, R - 1) * row_stride;
        prefetch_l2(next + at0.word[0]);
        prefetch_l2(next + at1.word[0]);
      }
    }
    if constexpr (kInt) {
      const uint4 b = has_x ? *reinterpret_cast<const uint4*>(xrow + (sl - sbeg_seg) * kSlabRows)
                            : make_uint4(0u, 0u, 0u, 0u);
      auto hash = [&](const uint32_t(&rw)[NW], int t) { return code_hash(run16_state<K>(rw, t, mask)); };
#pragma unroll
      for (int t = 0; t < 16; ++t) {
        // a0/a1: row q at column offsets 0/1, a2/a3: row q+4; then rows q+8, q+12.
        mma_u8s8_16832(acc[t], hash(w[0][0], t), hash(w[0][1], t), hash(w[1][0], t), hash(w[1][1], t), b.x, b.y);
        mma_u8s8_16832(acc[t], hash(w[2][0], t), hash(w[2][1], t), hash(w[3][0], t), hash(w[3][1], t), b.z, b.w);
      }
    } else {
      const uint32_t* xs = xrow + (sl - sbeg_seg) * (kSlabRows / 2);
      const uint32_t b0 = has_x ? xs[0] : 0u, b1 = has_x ? xs[4] : 0u;
#pragma unroll
      for (int t = 0; t < 16; ++t) {
        uint32_t af[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // a0/a1: rows (2q, 2q+1) at column offset h; a2/a3: rows (2q+8, 2q+9).
          af[h] = pack_halves(biased_code_half(run16_state<K>(w[0][h], t, mask)),
                              biased_code_half(run16_state<K>(w[1][h], t, mask)));
          af[2 + h] = pack_halves(biased_code_half(run16_state<K>(w[2][h], t, mask)),
                                  biased_code_half(run16_state<K>(w[3][h], t, mask)));
        }
        mma_f16_16816(acc[t], af[0], af[1], af[2], af[3], b0, b1);
      }
    }
  }

  // acc[t][e]: column 16g + t + 128·(e >= 2) of the block, D column 2q + (e & 1)
  // (fp16: activation row; bytes: operand column, row q's high / low half).
  const int M = a.M;
  Acc* mine = reinterpret_cast<Acc*>(warp_sums) + size_t(warp) * kBlockT * sum_cols;
#pragma unroll
  for (int t = 0; t < 16; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = 16 * g + t + (e >= 2 ? 128 : 0), col = 2 * q + (e & 1);
      if (col < sum_cols) mine[c * sum_cols + col] = acc[t][e];
    }
  __syncthreads();
  // Block sum in warp order, in real units (this segment's exponent or fixed-point
  // scale undone), then across segments in segment order.
  const int n = kBlockT * M;
  if constexpr (kInt) {
    const int* sums = reinterpret_cast<const int*>(warp_sums);
    float vals[kMmaMaxM];  // n / blockDim <= kMmaMaxM values per thread, written after every read
#pragma unroll
    for (int u = 0; u < kMmaMaxM; ++u) {
      const int i = int(threadIdx.x) + u * int(blockDim.x);
      if (i >= n) break;
      const int c = i / M, m = i - c * M;
      int hi = 0, lo = 0;
      for (int wv = 0; wv < kMmaWarps; ++wv) {
        hi += sums[(size_t(wv) * kBlockT + c) * sum_cols + 2 * m];
        lo += sums[(size_t(wv) * kBlockT + c) * sum_cols + 2 * m + 1];
      }
      const long long t = 256LL * hi + lo - (long long)kCodeBias * reinterpret_cast<const int*>(info)[m];
      vals[u] = float(t) * info[kMmaMaxM + m];
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kMmaMaxM; ++u) {
      const int i = int(threadIdx.x) + u * int(blockDim.x);
      if (i >= n) break;
      warp_sums[i] = vals[u];
    }
  } else {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      float s = 0.0f;
      for (int wv = 0; wv < kMmaWarps; ++wv) s += warp_sums[size_t(wv) * n + i];
      const int m = i % M;
      warp_sums[i] = (s - kHalfBias * info[2 * m]) * info[2 * m + 1];
    }
  }
  __syncthreads();
  const int c0 = cb * kBlockT;
  if (a.segments > 1) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) a.partials[(size_t(seg) * C + c0) * M + i] = warp_sums[i];
    if (!block_arrive_last(a.counters + cb, unsigned(a.segments))) return;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      float s = 0.0f;
#pragma unroll 8  // the loads of a batch of segments in flight together; the sum stays in segment order
      for (int sg = 0; sg < a.segments; ++sg) s += __ldcg(a.partials + (size_t(sg) * C + c0) * M + i);
      warp_sums[i] = s;
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int c = i / M, m = i - c * M;
    a.out[size_t(m) * C + c0 + c] = __float2bfloat16_rn(warp_sums[i]);
  }
}

template <bool kInt, int K>
void launch(const Axis0Args& a, dim3 grid, int smem_bytes, cudaStream_t stream) {
  // 8 KB of block sums per sum column plus the staged segment: past 48 KB
  // the kernel needs the opt-in, raised once to the largest plan's size.
  static const cudaError_t raised = cudaFuncSetAttribute(
      mma_axis0_kernel<kInt, K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      axis0_smem_bytes(kMmaMaxM, kAxis0StageBytes));
  if (raised != cudaSuccess) throw Error(std::string("mma axis-0 form: shared-memory opt-in failed: ") +
                                         cudaGetErrorString(raised));
  launch_programmatic(mma_axis0_kernel<kInt, K>, grid, kMmaThreads, smem_bytes, stream, a);
}

}  // namespace

MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count, bool byte_operands) {
  MmaAxis0Plan p{};
  p.byte_operands = byte_operands;
  p.col_tiles = int(g.cols / kBlockT);
  const int nslabs = int((g.rows + kSlabRows - 1) / kSlabRows);
  // Enough blocks for kMmaMinBlocksPerSm per SM, each warp keeping >= 1 slab,
  // and few enough rows per segment that its staged activations fit.
  const int want = std::max(1, sm_count * kMmaMinBlocksPerSm / p.col_tiles);
  // Staged bytes per row: M halves (fp16) or 2M words (bytes); the stride pads 8 halves or 16 words.
  const int max_slabs = byte_operands ? std::max(1, (kAxis0StageBytes / (8 * M) - 16) / kSlabRows / 4 * 4)
                                      : std::max(1, (kAxis0StageBytes / (2 * M) - 8) / kSlabRows / 4 * 4);
  const int fit = (nslabs + max_slabs - 1) / max_slabs;
  const int segments = std::max(fit, std::clamp(want, 1, std::max(1, nslabs / kMmaWarps)));
  p.slabs_per_segment = (nslabs + segments - 1) / segments;
  p.segments = (nslabs + p.slabs_per_segment - 1) / p.slabs_per_segment;
  p.partial_floats = p.segments > 1 ? std::size_t(p.segments) * g.cols * M : 0;
  const int seg_rows = p.slabs_per_segment * kSlabRows;
  p.xf_stride = byte_operands ? (seg_rows + 31) / 32 * 32 + 16 : (seg_rows + 63) / 64 * 64 + 8;
  p.smem_bytes = byte_operands ? axis0_smem_bytes(2 * M, 2 * M * p.xf_stride * 4) : axis0_smem_bytes(M, M * p.xf_stride * 2);
  return p;
}

void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                      SplitScratch scratch, cudaStream_t stream) {
  Axis0Args a{};
  a.geom = w.geom;
  a.codes = w.codes;
  a.scales = reinterpret_cast<const __half*>(w.scales);
  a.x = reinterpret_cast<const __nv_bfloat16*>(x);
  a.M = M;
  a.xf_stride = plan.xf_stride;
  a.segments = plan.segments;
  a.slabs_per_segment = plan.slabs_per_segment;
  a.partials = scratch.partials;
  a.counters = scratch.counters;
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  const dim3 grid(plan.col_tiles, plan.segments);
  const bool b = plan.byte_operands;
  switch (w.geom.k) {
    case 2: (b ? launch<true, 2> : launch<false, 2>)(a, grid, plan.smem_bytes, stream); break;
    case 3: (b ? launch<true, 3> : launch<false, 3>)(a, grid, plan.smem_bytes, stream); break;
    case 4: (b ? launch<true, 4> : launch<false, 4>)(a, grid, plan.smem_bytes, stream); break;
    default: throw Error("mma axis-0 form: no kernel for k=" + std::to_string(w.geom.k));
  }
}

}  // namespace trellis::cuda::detail
