// Reduce form (axis 1 on CUDA cores): y = W x for one projection (M 1..4), or
// for up to kReduceMaxParts projections of the same x stacked by rows in one
// launch (a layer's q, k, v: same cols, T, k and L; each its own output), and the
// fused gate/up/SwiGLU form out = tail(gate x, up x) (two projections, M 1..8;
// gate and up may have different k and L) — one kernel template.
//
// Math, per output row r and activation row m:
//   rounded  : out_mr = Σ_c bf16_rn(float(y_rc)·f_r) · x_mc      (fp32 FMA)
//   f32      : out_mr = Σ_c (float(y_rc)·f_r) · x_mc              (fp32 FMA)
//   factored : out_mr = f_r · Σ_c float(y_rc) · x_mc              (exact y, fp32 FMA)
// then bf16_rn (one projection) or swiglu_tail(split|fused) of the two sums.
//
// Launch: blocks of 8 warps (4 for one projection at M = 1); the warps form
// nwr row groups × nwc column groups (nwc a power of two up to the warps,
// chosen from the geometry so small-row tensors still fill the GPU). Stacked
// projections take consecutive ranges of blocks, each part with the nwc and
// blocks it would have on its own (so its sums are the same bit for bit).
// Every warp owns two (row, projection) items: rows 2w, 2w+1 of one
// projection, or row w of gate and of up. The block walks the input dim in
// chunks of nwc·1024 columns; each chunk of x (all M rows) is converted to
// fp32 once into shared memory (16-byte coalesced loads, prefetched one chunk
// ahead in registers), where lane l of column group g owns the 32-position run
// at column 1024·g + 32·l. Runs are swizzled by 16-byte quad (quad q of run n
// at quad q ^ (n mod 8)) so the lanes' LDS.128 reads are conflict-free. A
// lane decodes its runs from k+1 words (run_decode.cuh: constant shifts, the
// block-run loads from one offset), code words prefetched one chunk ahead.
// Per weight (M = 1, factored, the default numerics): SHF, LOP3, IMAD, IDP4A,
// FADD, FFMA; f32 adds an FMUL, rounded an FMUL, half a CVT and an unpack.
// Lane sums are reduced by a fixed xor butterfly, column groups in
// group order through shared memory: deterministic, and the summation order
// of a row depends only on (rows, cols, M, SM count), never on nproj, so the
// `split` tail is bit-identical to two one-projection launches + swiglu.
// At M = 1 (residual_norm.cuh): one projection may instead add its bf16
// outputs into an fp32 residual, write bf16(x ⊙ w) and its block's Σx² (a
// residual-norm producer, after one more block barrier), and any call may
// scale its outputs (gate and up before the tail) by a norm's s (a reader).
//
// Requirements: axis 1, cols a multiple of 32 (of T), x rows 16-byte aligned.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "cuda_core_kernels.cuh"
#include "residual_norm.cuh"
#include "run_decode.cuh"
#include "swiglu.cuh"
#include "trellis/error.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::cuda::detail {
namespace {

// Warps per block: 8, enough rows per block that the x chunk staged in
// shared memory is reused by 16 row-projections (its L2 traffic stays below the
// code bytes for M <= 2 at k = 2); 4 for one projection at M = 1 (a decode
// step's q/k/v and o), whose 8-row blocks spread a 5120-row layer over the
// SMs within one block of the average (640 blocks, at most 5 on an SM of 132)
// where 16-row blocks left some SMs 3 and others 2.
__host__ __device__ constexpr int warps_per_block(int nproj, int M) { return nproj == 1 && M == 1 ? 4 : 8; }
template <int NPROJ, int M>
constexpr int kThreadsPerBlock = 32 * warps_per_block(NPROJ, M);
// Output rows per block: two per warp of one projection, one (of gate and up) per warp of the pair.
int rows_per_block(int nproj, int M, int log2_nwc) {
  return (nproj == 1 ? 2 : 1) * (warps_per_block(nproj, M) >> log2_nwc);
}
constexpr int kWarpCols = 1024;  // one 32-position run per lane
// Staged x chunk: nwc·M·1024 fp32, nwc·M <= 8 (32 KiB) with 8 warps, <= 4 (16 KiB) with 4.
__host__ __device__ constexpr int stage_floats(int warps) { return warps * kWarpCols; }
// Blocks per SM the kernel is compiled for, all at <= 80 registers but the
// last: six of 4 warps (one projection, M = 1), three of 8 for one projection
// at M = 2, which fit without spills, two of 8 (<= 128 registers) otherwise.
template <int NPROJ, int M>
constexpr int kMinBlocksPerSm = warps_per_block(NPROJ, M) == 4 ? 6 : NPROJ == 1 && M <= 2 ? 3 : 2;

// Per part p: its projection (NPROJ 1), or gate (p = 0) and up (p = 1) for
// NPROJ 2, whose launch is one part with out[0], log2_nwc[0].
struct ReduceArgs {
  TrellisGeometry geom[kReduceMaxParts];
  const uint32_t* codes[kReduceMaxParts];
  const __half* scales[kReduceMaxParts];
  __nv_bfloat16* out[kReduceMaxParts];  // [M][rows of the part]
  int log2_nwc[kReduceMaxParts];        // column groups per block = 1 << log2_nwc
  int first_block[kReduceMaxParts];     // the part's first block (NPROJ 1)
  int parts;                            // stacked projections (NPROJ 1), 1 for NPROJ 2
  const __nv_bfloat16* x;               // [M][cols]
  int M;                                // activation rows, <= the template's M
  SwigluTail tail;
  ResidualNormWrite residual;           // one projection at M = 1: a residual-norm producer (out not written)
  NormScale scale;                      // M = 1: a residual-norm reader (gate and up scaled before the tail)
};

// The run at block b, offset t0 of a row-major stored row: one offset from
// the row, then the block-run loads (words 0..k−1 at fixed offsets, a vector
// at k = 2 and 4; only the run at t0 = 0 wraps).
template <int K>
__device__ __forceinline__ void load_item(const uint32_t* __restrict__ row, int T, int b, int t0,
                                          uint32_t (&w)[K + 1]) {
  const int wpb = T * K / 32;
  load_block_run<K>(row + (b * wpb + run_first_word(T, K, t0)), t0 == 0, w, wpb);
}

template <int KG, int KU, int NPROJ, int M, Numerics MODE>
__global__ void __launch_bounds__(kThreadsPerBlock<NPROJ, M>, kMinBlocksPerSm<NPROJ, M>)
    reduce_kernel(const ReduceArgs a) {
  allow_dependent_grids();
  constexpr int K0 = KG, K1 = NPROJ == 2 ? KU : KG;
  constexpr int kWarps = warps_per_block(NPROJ, M), kThreads = kThreadsPerBlock<NPROJ, M>;
  constexpr int kStageFloats = stage_floats(kWarps);
  constexpr int kStageItemsPerThread = kStageFloats / 8 / kThreads;  // 16-byte loads (8 bf16) per thread
  __shared__ __align__(16) float xs[kStageFloats];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int part = 0;  // this block's projection (NPROJ 1), or the pair (NPROJ 2)
  if constexpr (NPROJ == 1)
    for (int p = 1; p < a.parts; ++p)
      if (int(blockIdx.x) >= a.first_block[p]) part = p;
  const int pu = NPROJ == 2 ? 1 : part;  // the second item's projection
  const int block = int(blockIdx.x) - a.first_block[part];
  const int log2_nwc = a.log2_nwc[part];
  const int nwc = 1 << log2_nwc, nwr = kWarps >> log2_nwc;
  const int wr = warp >> log2_nwc, wc = warp & (nwc - 1);
  const TrellisGeometry& G0 = a.geom[part];
  const TrellisGeometry& G1 = a.geom[pu];
  const uint32_t* __restrict__ codes0 = a.codes[part];
  const uint32_t* __restrict__ codes1 = a.codes[pu];
  __nv_bfloat16* __restrict__ out = a.out[part];
  const int R = int(G0.rows), C = int(G0.cols), T = G0.T;

  const int row0 = NPROJ == 1 ? block * 2 * nwr + 2 * wr : block * nwr + wr;
  const int row1 = NPROJ == 1 ? row0 + 1 : row0;
  const int r0 = min(row0, R - 1), r1 = min(row1, R - 1);
  const uint32_t mask0 = (1u << G0.L) - 1u, mask1 = (1u << G1.L) - 1u;
  // Row-major axis-1 codes: row r starts at word r·(cols/T)·wpb (block_offset(r, 0)).
  const uint32_t* __restrict__ row_codes0 = codes0 + (long long)r0 * (C / T) * (T * K0 / 32);
  const uint32_t* __restrict__ row_codes1 = codes1 + (long long)r1 * (C / T) * (T * K1 / 32);
  const float f0 = row_factor(__half2float(a.scales[part][r0]));
  const float f1 = row_factor(__half2float(a.scales[pu][r1]));

  const int CW = nwc * kWarpCols;
  const int nchunks = (C + CW - 1) / CW;
  const int item_shift = 7 + log2_nwc;  // log2(CW / 8): 16-byte items per activation row
  const int items = M << item_shift;

  // This lane's run: column 1024·wc + 32·lane of each chunk (block b, offset t0).
  int col = wc * kWarpCols + lane * 32;
  int b = col / T, t0 = col - b * T;
  const int db = CW / T, dt = CW - db * T;

  uint4 pf[kStageItemsPerThread];
  auto fetch_x = [&](int chunk) {
#pragma unroll
    for (int s = 0; s < kStageItemsPerThread; ++s) {
      const int it = tid + kThreads * s;
      pf[s] = make_uint4(0u, 0u, 0u, 0u);
      if (it < items) {
        const int m = it >> item_shift, u = it & ((1 << item_shift) - 1);
        const int c = chunk * CW + 8 * u;
        if (m < a.M && c < C) pf[s] = __ldg(reinterpret_cast<const uint4*>(a.x + size_t(m) * C + c));
      }
    }
  };
  auto stage_x = [&]() {
#pragma unroll
    for (int s = 0; s < kStageItemsPerThread; ++s) {
      const int it = tid + kThreads * s;
      if (it < items) {
        const int m = it >> item_shift, u = it & ((1 << item_shift) - 1);
        const int n = u >> 2, q0 = (u & 3) * 2;
        float* base = xs + m * CW + n * 32;
        *reinterpret_cast<float4*>(base + 4 * (q0 ^ (n & 7))) =
            make_float4(bf16_lo(pf[s].x), bf16_hi(pf[s].x), bf16_lo(pf[s].y), bf16_hi(pf[s].y));
        *reinterpret_cast<float4*>(base + 4 * ((q0 + 1) ^ (n & 7))) =
            make_float4(bf16_lo(pf[s].z), bf16_hi(pf[s].z), bf16_lo(pf[s].w), bf16_hi(pf[s].w));
      }
    }
  };

  uint32_t w0[K0 + 1], w1[K1 + 1];
  auto fetch_codes = [&]() {
    const bool valid = col < C;  // runs past the end read block 0 (x is zero there)
    const int bb = valid ? b : 0, tt = valid ? t0 : 0;
    load_item<K0>(row_codes0, T, bb, tt, w0);
    load_item<K1>(row_codes1, T, bb, tt, w1);
  };

  float acc[2][M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[0][m] = acc[1][m] = 0.0f;

  // x is prefetched a chunk ahead in registers for M <= 4; at M 5..8 the
  // registers go to the sums and x is loaded just before it is staged.
  constexpr bool kPrefetchX = M <= 4;
  fetch_codes();
  // Programmatic launch: only weights (the row scales and the first code
  // words, which no earlier kernel writes) are read before the wait, so their
  // latency overlaps the previous kernel's tail; x and out come after it.
  wait_for_prerequisite_grids();
  if constexpr (kPrefetchX) fetch_x(0);
  // Residual norm (residual_norm.cuh; M = 1): a reader's partials (per slot
  // l the sum of partials l, l + 32, …) and a producer's (one projection)
  // residual and weight at the block's rows go to shared memory before the
  // first barrier, their loads in flight with x's; they are read after the loop.
  __shared__ double norm_slots[32];
  __shared__ float residual_rows[2][2 * kWarps];
  const bool produces = NPROJ == 1 && M == 1 && a.residual.x, scaled = M == 1 && a.scale.partials;
  if constexpr (M == 1) {
    if (scaled && tid < 32) norm_slots[tid] = norm_partials_share(a.scale, tid, 32);
    if (produces && tid < 2 * nwr) {
      const int r = min(block * 2 * nwr + tid, R - 1);
      residual_rows[0][tid] = a.residual.x[r];
      residual_rows[1][tid] = a.residual.w[r];
    }
  }
  const int n = wc * 32 + lane, swz = lane & 7;
  for (int ch = 0; ch < nchunks; ++ch) {
    if constexpr (!kPrefetchX) fetch_x(ch);
    __syncthreads();  // the previous chunk's reads are done
    stage_x();
    __syncthreads();
    uint32_t c0[K0 + 1], c1[K1 + 1];
#pragma unroll
    for (int i = 0; i <= K0; ++i) c0[i] = w0[i];
#pragma unroll
    for (int i = 0; i <= K1; ++i) c1[i] = w1[i];
    if (ch + 1 < nchunks) {
      if constexpr (kPrefetchX) fetch_x(ch + 1);
      col += CW;
      t0 += dt;
      b += db;
      if (t0 >= T) t0 -= T, ++b;
      fetch_codes();
    }
    const float* xrun = xs + n * 32;
#pragma unroll
    for (int j4 = 0; j4 < 8; ++j4) {
      // Four positions of both items first, then one LDS.128 of x per row m.
      float y0[4], y1[4];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        y0[jj] = code_float(run_state<K0>(c0, 4 * j4 + jj, mask0));
        y1[jj] = code_float(run_state<K1>(c1, 4 * j4 + jj, mask1));
        if constexpr (MODE != Numerics::factored) {
          y0[jj] *= f0;
          y1[jj] *= f1;
          if constexpr (MODE == Numerics::rounded) round_bf16_pair(y0[jj], y1[jj]);
        }
      }
      const float* xq = xrun + 4 * (j4 ^ swz);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float4 xv = *reinterpret_cast<const float4*>(xq + m * CW);
        acc[0][m] = fmaf(y0[0], xv.x, acc[0][m]);
        acc[1][m] = fmaf(y1[0], xv.x, acc[1][m]);
        acc[0][m] = fmaf(y0[1], xv.y, acc[0][m]);
        acc[1][m] = fmaf(y1[1], xv.y, acc[1][m]);
        acc[0][m] = fmaf(y0[2], xv.z, acc[0][m]);
        acc[1][m] = fmaf(y1[2], xv.z, acc[1][m]);
        acc[0][m] = fmaf(y0[3], xv.w, acc[0][m]);
        acc[1][m] = fmaf(y1[3], xv.w, acc[1][m]);
      }
    }
  }

  // Lane sums: fixed xor butterfly.
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int o = 16; o; o >>= 1) acc[i][m] += __shfl_xor_sync(0xffffffffu, acc[i][m], o);

  const float norm_s = scaled ? norm_scale_of(warp_sum_f64(norm_slots[lane]), a.scale) : 1.0f;

  // Column groups, in group order. A producer keeps every thread for its block sum below.
  if (nwc > 1) {
    __syncthreads();
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int m = 0; m < M; ++m) xs[(warp * 2 + i) * M + m] = acc[i][m];
    }
    __syncthreads();
    if (wc != 0 && !produces) return;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float s = xs[((wr * nwc) * 2 + i) * M + m];
        for (int g = 1; g < nwc; ++g) s += xs[((wr * nwc + g) * 2 + i) * M + m];
        acc[i][m] = s;
      }
  }
  if (lane != 0 && !produces) return;
  double ss = 0.0;  // a producer's Σ x² over this warp's rows
  if (lane == 0 && wc == 0) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
      if (m >= a.M) break;
      float v0 = acc[0][m], v1 = acc[1][m];
      if constexpr (MODE == Numerics::factored) {
        v0 *= f0;
        v1 *= f1;
      }
      v0 *= norm_s;
      v1 *= norm_s;
      if constexpr (NPROJ == 1) {
        if (produces) {
          const float* rx = residual_rows[0] + 2 * wr;
          const float* rw = residual_rows[1] + 2 * wr;
          if (row0 < R) ss += residual_norm_output(a.residual, row0, rx[0], rw[0], v0);
          if (row1 < R) ss += residual_norm_output(a.residual, row1, rx[1], rw[1], v1);
        } else {
          if (row0 < R) out[size_t(m) * R + row0] = __float2bfloat16_rn(v0);
          if (row1 < R) out[size_t(m) * R + row1] = __float2bfloat16_rn(v1);
        }
      } else {
        if (row0 < R) out[size_t(m) * R + row0] = __float2bfloat16_rn(swiglu_tail(a.tail, v0, v1));
      }
    }
  }
  if constexpr (NPROJ == 1 && M == 1) {
    if (!produces) return;
    __shared__ double warp_ss[kWarps];
    if (lane == 0) warp_ss[warp] = ss;
    __syncthreads();
    if (tid == 0) {
      double t = 0.0;
      for (int w = 0; w < kWarps; ++w) t += warp_ss[w];
      a.residual.partials[block] = t;
    }
  }
}

// Column groups per block: the fewest that give at least two blocks per SM
// (one at M = 1), counted with the one-projection layout (so nproj 1 and 2 sum
// alike), with nwc·M·1024 floats in that layout's stage and no group entirely
// past the last column.
int column_groups_log2(int R, int C, int M, int sm_count) {
  const int warps = warps_per_block(1, M), min_blocks = (M == 1 ? 1 : 2) * sm_count;
  int lg = 0;
  while (true) {
    const int nwc = 1 << lg;
    if (2 * nwc * std::max(M, 1) > stage_floats(warps) / kWarpCols) break;
    if (2 * nwc * kWarpCols > C + kWarpCols - 32) break;  // the next group would have no columns at all
    const int rows = rows_per_block(1, M, lg);
    const int blocks = (R + rows - 1) / rows;
    if (blocks >= min_blocks) break;
    ++lg;
    if ((1 << lg) == warps) break;
  }
  return lg;
}

using Launcher = void (*)(const ReduceArgs&, int, cudaStream_t);

template <int KG, int KU, int NPROJ, int M, Numerics MODE>
void launch_one(const ReduceArgs& a, int blocks, cudaStream_t stream) {
  launch_programmatic(reduce_kernel<KG, KU, NPROJ, M, MODE>, blocks, kThreadsPerBlock<NPROJ, M>, 0, stream, a);
}

template <int KG, int KU, int NPROJ, int M>
Launcher pick_mode(Numerics mode) {
  switch (mode) {
    case Numerics::rounded: return launch_one<KG, KU, NPROJ, M, Numerics::rounded>;
    case Numerics::f32: return launch_one<KG, KU, NPROJ, M, Numerics::f32>;
    case Numerics::factored: return launch_one<KG, KU, NPROJ, M, Numerics::factored>;
  }
  return nullptr;
}

template <int KG, int KU, int NPROJ>
Launcher pick_m(int M, Numerics mode) {
  switch (M) {
    case 1: return pick_mode<KG, KU, NPROJ, 1>(mode);
    case 2: return pick_mode<KG, KU, NPROJ, 2>(mode);
    case 3: return pick_mode<KG, KU, NPROJ, 3>(mode);
    case 4: return pick_mode<KG, KU, NPROJ, 4>(mode);
    default: break;
  }
  if constexpr (NPROJ == 2) {
    // M 5..8 share the M = 8 kernel (rows >= M read and write nothing).
    if (M >= 5 && M <= 8) return pick_mode<KG, KU, NPROJ, 8>(mode);
  }
  return nullptr;
}

template <int KG>
Launcher pick_up(int ku, int M, Numerics mode) {
  switch (ku) {
    case 2: return pick_m<KG, 2, 2>(M, mode);
    case 3: return pick_m<KG, 3, 2>(M, mode);
    case 4: return pick_m<KG, 4, 2>(M, mode);
    default: return nullptr;
  }
}

// Axis 1 row-major, cols a multiple of 32, the parts sharing cols and T
// (and rows: the gate/up pair), M in 1..max_m, 32-bit indexable.
void check_reduce_geometry(const TrellisTensorView* w, int n, int M, int max_m, bool same_rows,
                           const char* share_rule) {
  if (M < 1 || M > max_m) throw Error("reduce form: M=" + std::to_string(M) + " outside 1.." + std::to_string(max_m));
  const TrellisGeometry& g = w[0].geom;
  for (int p = 0; p < n; ++p) {
    const TrellisGeometry& q = w[p].geom;
    if (q.axis != 1 || q.block_interleave != 0) throw Error("reduce form: needs axis-1 row-major codes");
    if (q.cols % 32 != 0) throw Error("reduce form: cols must be a multiple of 32");
    if (q.cols != g.cols || q.T != g.T || (same_rows && q.rows != g.rows)) throw Error(std::string("reduce form: ") + share_rule);
    if (q.rows * q.cols > (int64_t(1) << 31)) throw Error("reduce form: tensor too large for 32-bit indexing");
  }
}

void set_projection(ReduceArgs& a, int p, const TrellisTensorView& v) {
  a.geom[p] = v.geom;
  a.codes[p] = v.codes;
  a.scales[p] = reinterpret_cast<const __half*>(v.scales);
}

Launcher pick(int nproj, int kg, int ku, int M, Numerics mode) {
  if (nproj == 1) {
    switch (kg) {
      case 2: return pick_m<2, 2, 1>(M, mode);
      case 3: return pick_m<3, 3, 1>(M, mode);
      case 4: return pick_m<4, 4, 1>(M, mode);
      default: return nullptr;
    }
  }
  switch (kg) {
    case 2: return pick_up<2>(ku, M, mode);
    case 3: return pick_up<3>(ku, M, mode);
    case 4: return pick_up<4>(ku, M, mode);
    default: return nullptr;
  }
}

// One launch of checked calls: `parts` stacked one-projection calls (nproj 1:
// part p is w[p] into out[p]) or the gate/up pair (nproj 2, one part: w[0],
// w[1] into out[0]). Each part gets the column groups and blocks it would
// have on its own; a block of the pair holds nwr rows, of one projection 2·nwr.
void launch_parts(const TrellisTensorView* w, int nproj, int parts, const uint16_t* x, int M, uint16_t* const* out,
                  Numerics mode, SwigluTail tail, int sm_count, cudaStream_t stream, const ResidualNormWrite& residual,
                  const NormScale& scale) {
  if ((residual.x || scale.partials) && M != 1)
    throw Error("reduce form: the residual norm's producer and reader run at M = 1, got M=" + std::to_string(M));
  if (residual.x && nproj != 1) throw Error("reduce form: a residual-norm producer is one projection, not gate/up");
  if (residual.x && parts != 1) throw Error("reduce form: a residual-norm producer is one projection, not a stack");
  ReduceArgs a{};
  a.residual = residual;
  a.scale = scale;
  for (int p = 0; p < std::max(parts, nproj); ++p) set_projection(a, p, w[p]);
  int blocks = 0;
  for (int p = 0; p < parts; ++p) {
    const TrellisGeometry& g = w[p].geom;
    a.out[p] = reinterpret_cast<__nv_bfloat16*>(out[p]);
    a.log2_nwc[p] = column_groups_log2(int(g.rows), int(g.cols), M, std::max(sm_count, 1));
    a.first_block[p] = blocks;
    const int rows = rows_per_block(nproj, M, a.log2_nwc[p]);
    blocks += int((g.rows + rows - 1) / rows);
  }
  a.parts = parts;
  a.x = reinterpret_cast<const __nv_bfloat16*>(x);
  a.M = M;
  a.tail = tail;
  const Launcher f = pick(nproj, w[0].geom.k, w[nproj - 1].geom.k, M, mode);
  if (!f)
    throw Error("reduce form: no kernel for k=" + std::to_string(w[0].geom.k) + "/" +
                std::to_string(w[nproj - 1].geom.k));
  f(a, blocks, stream);
}

}  // namespace

void launch_reduce(const TrellisTensorView* w, int nproj, const uint16_t* x, int M, uint16_t* out, Numerics mode,
                   SwigluTail tail, int sm_count, cudaStream_t stream, const ResidualNormWrite& residual,
                   const NormScale& scale) {
  if (nproj != 1 && nproj != 2) throw Error("reduce form: nproj must be 1 or 2, got " + std::to_string(nproj));
  if (nproj == 1) {
    check_reduce_geometry(w, 1, M, 4, false, "");
    return launch_parts(w, 1, 1, x, M, &out, mode, SwigluTail::split, sm_count, stream, residual, scale);
  }
  check_reduce_geometry(w, 2, M, 8, true, "gate and up must share rows, cols and T");
  launch_parts(w, 2, 1, x, M, &out, mode, tail, sm_count, stream, residual, scale);
}

int reduce_blocks(const TrellisGeometry& g, int M, int sm_count) {
  const int rows = rows_per_block(1, M, column_groups_log2(int(g.rows), int(g.cols), M, std::max(sm_count, 1)));
  return int((g.rows + rows - 1) / rows);
}

bool reduce_stacks(const TrellisTensorView* w, int parts) {
  if (parts < 1 || parts > kReduceMaxParts) return false;
  const TrellisGeometry& g = w[0].geom;
  for (int p = 1; p < parts; ++p) {
    const TrellisGeometry& q = w[p].geom;
    if (q.cols != g.cols || q.T != g.T || q.k != g.k || q.L != g.L) return false;
  }
  return true;
}

void launch_reduce_stacked(const TrellisTensorView* w, int parts, const uint16_t* x, int M, uint16_t* const* out,
                           Numerics mode, int sm_count, cudaStream_t stream, const NormScale& scale) {
  if (!reduce_stacks(w, parts))
    throw Error("reduce form: " + std::to_string(parts) + " stacked projections must be 1.." +
                std::to_string(kReduceMaxParts) + " with the same cols, T, k and L");
  check_reduce_geometry(w, parts, M, 4, false, "stacked projections must share cols and T");
  launch_parts(w, 1, parts, x, M, out, mode, SwigluTail::split, sm_count, stream, {}, scale);
}

}  // namespace trellis::cuda::detail
