// Tensor-core form, axis 1: y = W x (one projection) or silu(gate x)·(up x)
// (two projections, fused), for 1..8 activation rows; each weight is decoded
// once and feeds all rows through one m16n8k16 MMA.
//
// Math (numerics "factored"): the MMA accumulates Σ_c (y_rc + 1534)·xf_mc with
// A = binary16(y + 1534) (exact) and B = the staged activations xf (fp16, a
// power-of-two rescale of x, stage_smem.cuh), in fp32. Per output:
//   out_mr = (D_rm − 1534·Σ_c xf_mc) · 2^−E_m · f_r.
//
// Launch: one block of kAxis1Warps (20) warps per SM (fewer for small matrices). The block
// first stages all of x ([M][cols], fp16) in shared memory, then each warp
// walks an equal contiguous share of the chunk stream: chunk = (16-row tile,
// half of a 256-column block), tile-major. The code words of the next chunk
// are loaded while the current one is decoded, across tile boundaries too.
// In a chunk, lane (g, q) decodes rows g and g+8 of the tile, positions
// 32q..32q+31 (one 32-position run per row and projection), and step s of the
// chunk's 8 MMAs uses run positions 4s..4s+3: MMA K index 2q+e ↔ column
// 32q+4s+e and 2q+8+e ↔ 32q+4s+2+e (e = 0, 1), for A and B alike; the staged
// row keeps each lane's 64 bytes of a chunk as 4 uint4 slots interleaved with
// the other lanes' (slot 4i+q), and rows are 32 halves longer than cols, so
// the fragment loads are free of bank conflicts.
//
// A tile split between warps (a share boundary inside it) is summed by the
// last-arriving warp in share order (split_k.cuh): deterministic; with byte
// operands each warp instead adds its int32 sums into zeroed accumulators and
// the last arrival takes the totals (exact, so equally deterministic, and one
// L2 round trip instead of one per contributor). The split
// depends only on the geometry and the SM count, so a one-projection launch
// and a gate/up launch on the same geometry round identically (the `split`
// tail is bit-identical to two projections + swiglu).
//
// M range 1..8 with M·(cols + 32) halves in kAxis1StageBytes; rows a multiple
// of 8; cols a multiple of 256 (T = 256).
//
// Integer operands (form imma, M 1..4): the same chunk walk, but the MMA is
// m16n8k32 with A = the four bytes of each weight's 1MAD hash (unsigned) and
// B = x as 15-bit fixed point split into two int8 halves, each replicated over
// the four bytes of a word (stage_bytes.cuh): operand column 2m holds row m's
// high half, 2m + 1 its low half. The tensor core so forms the byte sum (no
// IDP4A, no fp16 conversion per weight: per weight one funnel shift, one mask
// and one IMAD remain) and accumulates exactly in int32. Lane (g, q) holds
// D[row][2q], D[row][2q+1]: activation row q's two halves. Per output:
//   out_mr = (256·D_hi + D_lo − 510·Σ_c q_mc) · (1/S_m) · f_r   (int64, then fp32).
// Step s of a chunk's 16 MMAs: K slot q ↔ run position 2s, slot q+4 ↔ 2s+1 of
// lane q's run (column 32q + 2s, 32q + 2s + 1), for A and B alike.
// The int32 sums stay exact for cols ≤ 16384 (|D_hi| ≤ cols·1020·127 < 2^31).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernel_instances.cuh"
#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "stage_bytes.cuh"
#include "stage_smem.cuh"
#include "swiglu.cuh"
#include "trellis/error.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::cuda::detail {
namespace {

struct Axis1Args {
  TrellisGeometry geom[2];
  const uint32_t* codes[2];
  const __half* scales[2];
  const __nv_bfloat16* x;  // [M][cols]
  int M, xf_stride;        // staged row stride: halves (fp16 operands) or words (byte operands)
  StateCut cut;            // of the projections' L (equal)
  int chunks, chunks_per_tile, warps, max_contrib, tiles;
  int partial_cols;  // per output row of a split tile: M (fp16) or 2M (int, one per operand column)
  float* partials;   // fp16 operands: [tiles][max_contrib][NPROJ][16][partial_cols] fp32 partials
  unsigned* counters;  // [tiles] arrival counters; bytes: then [tiles][NPROJ][16][2M] int32 accumulators (zero)
  __nv_bfloat16* out;  // [M][rows]
  SwigluTail tail;
  NormScale scale;  // byte operands at M = 1: a residual-norm reader (stage_bytes.cuh)
};

// Stored-row stride in words (row-major axis-1 codes).
struct RowCodes {
  const uint32_t* base;
  int row_words;
  __device__ __forceinline__ const uint32_t* row(int r) const { return base + size_t(r) * row_words; }
};

// Group j (8 halves) of a staged row: chunk j/16, and within it the lane
// order of the fragment loads (group 4q+i of a chunk → slot 4i+q).
struct Axis1Slot {
  __device__ __forceinline__ int operator()(int j) const { return (j & ~15) | ((j & 3) << 2) | ((j >> 2) & 3); }
};

// Byte operands: column c = 128·b + 32·q + j (half block b, lane q's run,
// position j) at word 128·b + 16·(j/4) + 4·q + j%4, so a lane's words for run
// positions 4s'..4s'+3 are one 16-byte load; with the row stride ≡ 16 (mod
// 32) words, a quarter warp (operand rows n, n+1 × q = 0..3) hits 32 banks.
struct Axis1ByteSlot {
  static constexpr bool kQuads = true;  // columns 4c..4c+3: words 4c'..4c'+3 (stage_bytes.cuh)
  __device__ __forceinline__ int operator()(int c) const {
    return (c & ~127) | (((c & 31) >> 2) << 4) | (((c >> 5) & 3) << 2) | (c & 3);
  }
};

// The warp that owns chunk x when `chunks` are shared by `warps` as
// [w·chunks/warps, (w+1)·chunks/warps).
__device__ __forceinline__ int chunk_owner(long long x, int chunks, int warps) {
  return int(((x + 1) * warps + chunks - 1) / chunks - 1);
}

// kL: 0 for any L (every state cut by the mask), else the projections' L,
// which lets the byte operands' decode cut some states by the step (run_decode.cuh).
template <bool kInt, int K0, int K1, int NPROJ, int kL>
__global__ void __launch_bounds__(kAxis1Threads, 1) mma_axis1_kernel(const Axis1Args a) {
  allow_dependent_grids();
  using Acc = std::conditional_t<kInt, int, float>;
  extern __shared__ uint4 smem[];
  constexpr int wpb0 = kBlockT * K0 / 32, wpb1 = kBlockT * K1 / 32;
  // Shared memory: the staged operand rows, then 2·kMmaMaxM info floats, then the staging scratch.
  const size_t operand_bytes = kInt ? size_t(2 * a.M) * a.xf_stride * 4 : size_t(a.M) * a.xf_stride * 2;
  float* info = reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + operand_bytes);
  float* scratch = info + 2 * kMmaMaxM;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int R = int(a.geom[0].rows), C = int(a.geom[0].cols);
  constexpr int D0 = step_positions(kL, K0), D1 = step_positions(kL, K1);
  const int nblocks = C / kBlockT, cpt = a.chunks_per_tile;
  const RowCodes gate{a.codes[0], nblocks * wpb0}, up{a.codes[1], nblocks * wpb1};

  const int w = int(blockIdx.x) * kAxis1Warps + int(threadIdx.x >> 5);
  const int c_beg = w < a.warps ? int((long long)w * a.chunks / a.warps) : 0;
  const int c_end = w < a.warps ? int((long long)(w + 1) * a.chunks / a.warps) : 0;

  uint32_t g0[K0 + 1], g1[K0 + 1], u0[K1 + 1], u1[K1 + 1];
  uint32_t ng0[K0 + 1], ng1[K0 + 1], nu0[K1 + 1], nu1[K1 + 1];
  // The lane's rows (g and g + 8 of the tile being loaded, clamped), set when the loads enter a tile.
  const uint32_t *grow0 = nullptr, *grow1 = nullptr, *urow0 = nullptr, *urow1 = nullptr;
  int rows_tile = -1;
  auto load_chunk = [&](int tile, int rem, uint32_t(&a0)[K0 + 1], uint32_t(&a1)[K0 + 1], uint32_t(&b0)[K1 + 1],
                        uint32_t(&b1)[K1 + 1]) {
    if (tile != rows_tile) {
      rows_tile = tile;
      const int r0 = min(tile * kTileRows + g, R - 1), r1 = min(tile * kTileRows + g + 8, R - 1);
      grow0 = gate.row(r0), grow1 = gate.row(r1);
      if constexpr (NPROJ == 2) urow0 = up.row(r0), urow1 = up.row(r1);
    }
    // Half h of block b = rem/2: lane q's run starts at word (8b + 7 − 4h − q)·k
    // of the row (run_first_word at t0 = 128h + 32q), and wraps for h = q = 0.
    const int h = rem & 1, run = 4 * rem + 7 - 8 * h - q;
    const bool wraps = h == 0 && q == 0;
    load_block_run<K0>(grow0 + run * K0, wraps, a0);
    load_block_run<K0>(grow1 + run * K0, wraps, a1);
    if constexpr (NPROJ == 2) {
      load_block_run<K1>(urow0 + run * K1, wraps, b0);
      load_block_run<K1>(urow1 + run * K1, wraps, b1);
    }
  };
  int tile = c_beg / cpt, rem = c_beg - tile * cpt;
  // The first chunk's words are in flight while the block stages x.
  if (c_beg < c_end) load_chunk(tile, rem, g0, g1, u0, u1);
  // Programmatic launch: only code words (weights, which no earlier kernel
  // writes) are read before the wait, so their latency overlaps the previous
  // kernel's tail; x, the split scratch and out come after it, in every warp.
  wait_for_prerequisite_grids();
  // Lane (g, q) reads operand row g (fp16: activation row g; bytes: operand
  // column g = 2m + half); rows past the operand's repeat its last row, whose
  // MMA columns no output reads.
  const uint4* xrow;
  if constexpr (kInt) {
    uint32_t* words = reinterpret_cast<uint32_t*>(smem);
    stage_bytes_block(StageSlice{a.x, C, 0, C, C, a.M, nullptr}, words, a.xf_stride, reinterpret_cast<int*>(info),
                      info + kMmaMaxM, scratch, Axis1ByteSlot{}, a.scale);
    xrow = reinterpret_cast<const uint4*>(words + size_t(min(g, 2 * a.M - 1)) * a.xf_stride) + q;
  } else {
    __half* xf = reinterpret_cast<__half*>(smem);
    stage_block(StageSlice{a.x, C, 0, C, C, a.M, nullptr}, xf, a.xf_stride, info, scratch, Axis1Slot{});
    xrow = reinterpret_cast<const uint4*>(xf + size_t(min(g, a.M - 1)) * a.xf_stride) + q;
  }
  if (c_beg >= c_end) return;

  // Two accumulator sets per projection (even and odd MMA steps) halve the
  // chain of dependent MMAs; they are added once, in a fixed order.
  Acc acc[NPROJ][4], acc_odd[NPROJ][4];
#pragma unroll
  for (int p = 0; p < NPROJ; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[p][e] = acc_odd[p][e] = Acc(0);

  for (int c = c_beg; c < c_end; ++c) {
    int ntile = tile, nrem = rem + 1;
    if (nrem == cpt) ++ntile, nrem = 0;
    if (c + 1 < c_end) load_chunk(ntile, nrem, ng0, ng1, nu0, nu1);
    if constexpr (kInt) {
      // Word 4s'+i of the lane's slot group: column 32q + 4s' + i of half block `rem`.
#pragma unroll
      for (int sp = 0; sp < 8; ++sp) {
        const uint4 v = xrow[rem * 32 + 4 * sp];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int j = 4 * sp + 2 * h;  // run positions j, j + 1: K slots q, q + 4
          const uint32_t b0 = h ? v.z : v.x, b1 = h ? v.w : v.y;
          int(&ag)[4] = h ? acc_odd[0] : acc[0];
          mma_u8s8_16832(ag, run_hash<K0, D0>(g0, j, a.cut), run_hash<K0, D0>(g1, j, a.cut),
                         run_hash<K0, D0>(g0, j + 1, a.cut), run_hash<K0, D0>(g1, j + 1, a.cut), b0, b1);
          if constexpr (NPROJ == 2) {
            int(&au)[4] = h ? acc_odd[NPROJ - 1] : acc[NPROJ - 1];
            mma_u8s8_16832(au, run_hash<K1, D1>(u0, j, a.cut), run_hash<K1, D1>(u1, j, a.cut),
                           run_hash<K1, D1>(u0, j + 1, a.cut), run_hash<K1, D1>(u1, j + 1, a.cut), b0, b1);
          }
        }
      }
    } else {
      const uint32_t mask = a.cut.mask;
      uint32_t xw[16];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 v = xrow[rem * 16 + 4 * i];
        xw[4 * i] = v.x, xw[4 * i + 1] = v.y, xw[4 * i + 2] = v.z, xw[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        float(&ag)[4] = (s & 1) ? acc_odd[0] : acc[0];
        mma_f16_16816(ag, biased_pair<K0>(g0, 4 * s, mask), biased_pair<K0>(g1, 4 * s, mask),
                      biased_pair<K0>(g0, 4 * s + 2, mask), biased_pair<K0>(g1, 4 * s + 2, mask), xw[2 * s],
                      xw[2 * s + 1]);
        if constexpr (NPROJ == 2) {
          float(&au)[4] = (s & 1) ? acc_odd[NPROJ - 1] : acc[NPROJ - 1];
          mma_f16_16816(au, biased_pair<K1>(u0, 4 * s, mask), biased_pair<K1>(u1, 4 * s, mask),
                        biased_pair<K1>(u0, 4 * s + 2, mask), biased_pair<K1>(u1, 4 * s + 2, mask), xw[2 * s],
                        xw[2 * s + 1]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i <= K0; ++i) g0[i] = ng0[i], g1[i] = ng1[i];
    if constexpr (NPROJ == 2) {
#pragma unroll
      for (int i = 0; i <= K1; ++i) u0[i] = nu0[i], u1[i] = nu1[i];
    }
    if (nrem != 0 && c + 1 < c_end) {
      tile = ntile, rem = nrem;
      continue;
    }

    // The warp's part of this tile is done: flush it.
#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[p][e] += acc_odd[p][e], acc_odd[p][e] = Acc(0);
    const int r0 = tile * kTileRows + g, r1 = r0 + 8;
    const long long first = (long long)tile * cpt;
    const int owner0 = chunk_owner(first, a.chunks, a.warps);
    const int contributors = chunk_owner(first + cpt - 1, a.chunks, a.warps) - owner0 + 1;
    bool write = true;
    // Entry e of the accumulators: row (e < 2 ? r0 : r1), column 2q + (e & 1) of
    // the MMA's D (fp16: activation row; bytes: operand column).
    if (contributors > 1) {
      const int pc = a.partial_cols;
      if constexpr (kInt) {
        int* totals = reinterpret_cast<int*>(a.counters) + a.tiles + size_t(tile) * NPROJ * kTileRows * pc;
        write = add_split_tile<NPROJ>(acc, totals, pc, a.counters + tile, unsigned(contributors));
      } else {
        uint32_t* slots =
            reinterpret_cast<uint32_t*>(a.partials) + size_t(tile) * a.max_contrib * NPROJ * kTileRows * pc;
        uint32_t* mine = slots + size_t(w - owner0) * NPROJ * kTileRows * pc;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ri = e < 2 ? g : g + 8, col = 2 * q + (e & 1);
          if (col < pc) {
#pragma unroll
            for (int p = 0; p < NPROJ; ++p) mine[(p * kTileRows + ri) * pc + col] = __float_as_uint(acc[p][e]);
          }
        }
        write = arrive_last(a.counters + tile, unsigned(contributors));
        if (write) {
          // Entry (e, p) summed over the contributors in share order.
          int offset[4 * NPROJ];
          bool live[4 * NPROJ];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int ri = e < 2 ? g : g + 8, col = 2 * q + (e & 1);
#pragma unroll
            for (int p = 0; p < NPROJ; ++p) {
              live[e * NPROJ + p] = col < pc;
              offset[e * NPROJ + p] = (p * kTileRows + ri) * pc + col;
            }
          }
          float sums[4 * NPROJ];
          ordered_sums<4 * NPROJ, 8 / NPROJ>(sums, reinterpret_cast<const float*>(slots), offset, live,
                                             size_t(NPROJ) * kTileRows * pc, contributors);
#pragma unroll
          for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int p = 0; p < NPROJ; ++p)
              if (live[e * NPROJ + p]) acc[p][e] = sums[e * NPROJ + p];
        }
      }
    }
    // Output (m, row) from the projections' values in real units: the tail, then bf16.
    const auto emit = [&](int m, int row, const float(&v)[NPROJ]) {
      float y;
      if constexpr (NPROJ == 2) y = swiglu_tail(a.tail, v[0], v[1]);
      else y = v[0];
      a.out[size_t(m) * R + row] = __float2bfloat16_rn(y);
    };
    if (write) {
      if constexpr (kInt) {
        // Activation row q: entries 2rr (high half) and 2rr + 1 (low half) of row r0 / r1.
        if (q < a.M) {
          const long long bias = (long long)kCodeBias * reinterpret_cast<const int*>(info)[q];
          const float unscale = info[kMmaMaxM + q];
#pragma unroll
          for (int rr = 0; rr < 2; ++rr) {
            const int row = rr ? r1 : r0;
            if (row >= R) continue;
            float v[NPROJ];
#pragma unroll
            for (int p = 0; p < NPROJ; ++p) {
              const long long t = 256LL * acc[p][2 * rr] + acc[p][2 * rr + 1] - bias;
              v[p] = float(t) * unscale * (__half2float(a.scales[p][row]) * kCodeRcp);
            }
            emit(q, row, v);
          }
        }
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = e < 2 ? r0 : r1, m = 2 * q + (e & 1);
          if (row >= R || m >= a.M) continue;
          const float xsum = info[2 * m], unscale = info[2 * m + 1];
          float v[NPROJ];
#pragma unroll
          for (int p = 0; p < NPROJ; ++p)
            v[p] = (acc[p][e] - kHalfBias * xsum) * unscale * (__half2float(a.scales[p][row]) * kCodeRcp);
          emit(m, row, v);
        }
      }
    }
#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[p][e] = Acc(0);
    tile = ntile, rem = nrem;
  }
}

template <bool kInt, int kL>
struct Axis1Instances {
  template <int K0, int K1, int NPROJ>
  struct Of {
    static void launch(const Axis1Args& a, int blocks, int smem_bytes, cudaStream_t stream) {
      // Past 48 KB of shared memory the kernel needs the opt-in, raised once to the most any plan uses.
      static const cudaError_t raised = cudaFuncSetAttribute(mma_axis1_kernel<kInt, K0, K1, NPROJ, kL>,
                                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                             axis1_smem_bytes(kAxis1StageBytes));
      if (raised != cudaSuccess)
        throw Error(std::string("mma axis-1 form: shared-memory opt-in failed: ") + cudaGetErrorString(raised));
      launch_programmatic(mma_axis1_kernel<kInt, K0, K1, NPROJ, kL>, blocks, kAxis1Threads, smem_bytes, stream, a);
    }
  };
};

}  // namespace

MmaAxis1Plan plan_mma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count, bool byte_operands) {
  MmaAxis1Plan p{};
  p.byte_operands = byte_operands;
  p.tiles = int((g.rows + kTileRows - 1) / kTileRows);
  p.chunks_per_tile = int(g.cols / (kBlockT / 2));
  p.chunks = p.tiles * p.chunks_per_tile;
  p.warps = std::clamp(p.chunks / kMinChunksPerWarp, 1, sm_count * kAxis1Warps);
  p.blocks = (p.warps + kAxis1Warps - 1) / kAxis1Warps;
  // A tile meets at most this many shares: the interior ones hold >= chunks/warps chunks each.
  p.max_contrib = p.chunks_per_tile / (p.chunks / p.warps) + 2;
  p.partial_cols = byte_operands ? 2 * M : M;
  // fp16: ordered fp32 partials; bytes: int32 accumulators after the counters.
  p.partial_floats = byte_operands ? 0 : std::size_t(p.tiles) * p.max_contrib * nproj * kTileRows * p.partial_cols;
  p.counters = std::size_t(p.tiles) * (1 + (byte_operands ? nproj * kTileRows * p.partial_cols : 0));
  // Row strides: cols + 32 halves (fp16) or cols + 16 words (bytes), for conflict-free fragment loads.
  p.xf_stride = int(g.cols) + (byte_operands ? 16 : 32);
  p.smem_bytes = axis1_smem_bytes(byte_operands ? 2 * M * p.xf_stride * 4 : M * p.xf_stride * 2);
  return p;
}

void launch_mma_axis1(const MmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* x, int M,
                      uint16_t* out, SwigluTail tail, SplitScratch scratch, cudaStream_t stream,
                      const NormScale& scale) {
  if (scale.partials && (!plan.byte_operands || M != 1))
    throw Error("mma axis-1 form: a residual-norm reader takes byte operands (imma) at M = 1, got M=" +
                std::to_string(M));
  Axis1Args a{};
  set_call(a, w, nproj, x, M, out, tail, scratch.counters);
  a.scale = scale;
  a.xf_stride = plan.xf_stride;
  a.chunks = plan.chunks;
  a.chunks_per_tile = plan.chunks_per_tile;
  a.warps = plan.warps;
  a.max_contrib = plan.max_contrib;
  a.tiles = plan.tiles;
  a.partial_cols = plan.partial_cols;
  a.partials = scratch.partials;
  const int k0 = w[0].geom.k, k1 = w[nproj - 1].geom.k;
  a.cut = state_cut(w[0].geom.L);
  const auto bytes = [&](auto kl) {
    return pick_k_instance<Axis1Instances<true, decltype(kl)::value>::template Of>(k0, k1, nproj);
  };
  const auto f = plan.byte_operands ? for_state_cut(w[0].geom.L, bytes)
                                    : pick_k_instance<Axis1Instances<false, 0>::template Of>(k0, k1, nproj);
  if (!f) throw Error("mma axis-1 form: no kernel for k=" + std::to_string(k0));
  f(a, plan.blocks, plan.smem_bytes, stream);
}

}  // namespace trellis::cuda::detail
