// Integer tensor-core form, axis 1, on Hopper warpgroup MMAs (sm_90a): the
// imma form's math (mma_axis1.cu) with asynchronous wgmma instead of
// mma.sync, for 1..4 activation rows and cols·32 bytes of staged operand.
//
// Math (numerics "factored", bit-identical to the mma.sync imma kernel): a
// warpgroup (4 warps) owns a 64-row tile; warp w of it decodes rows 16w..16w+15
// exactly as an imma warp does (lane (g, q): rows g and g+8, run positions
// 32q..32q+31 of the half block), and each step's four hash words are the A
// fragment of one wgmma m64n8k32 (u8 × s8 → s32). B is x as 15-bit fixed
// point split into int8 halves (stage_bytes.cuh), operand column n = 2m + half,
// staged once per block in the wgmma's K-major, unswizzled layout: chunk c
// (128 columns) holds 16 steps of 256 bytes; step s, core matrix h (K bytes
// 16h..16h+15) holds rows n = 0..7 of 16 bytes, the 4 bytes of lane slot i
// being column 128c + 32i + 2s + h replicated. Per output:
//   out_mr = (256·D_hi + D_lo − 510·Σ_c q_mc) · (1/S_m) · f_r.
//
// Launch: one block of kWgmmaGroups warpgroups per SM; each warpgroup walks an
// equal contiguous share of the (64-row tile, half block) chunk stream, code
// words of the next chunk in flight while one is decoded. Per chunk and
// projection 16 wgmmas in groups of two steps: the group's A registers are
// written, fenced, issued and committed, and the next group is decoded while
// it runs (wait_group 1 keeps one group in flight). A tile split between
// warpgroups is summed per warp slice (16 rows): every contributing warp adds
// its int32 sums into zeroed accumulators and the last-arriving one takes the
// totals (split_k.cuh, add_split_tile): exact integers, so deterministic, and one
// projection and a gate/up launch on the same geometry split alike.
//
// Each mma.sync m16n8k32 of the imma kernel occupies its warp's tensor pipe
// for the same weights that one quarter of a wgmma carries asynchronously
// (mmabench: bench/results/h200_axis1_structure_experiments.txt).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernel_instances.cuh"
#include "kernels.cuh"
#include "launch_constants.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "stage_bytes.cuh"
#include "swiglu.cuh"
#include "trellis/error.hpp"
#include "trellis/cuda/programmatic_launch.cuh"

namespace trellis::cuda::detail {
namespace {

constexpr int kGroupRows = 64;  // the wgmma's M: rows of a warpgroup's tile

struct WgmmaArgs {
  TrellisGeometry geom[2];
  const uint32_t* codes[2];
  const __half* scales[2];
  const __nv_bfloat16* x;
  int M, chunks, chunks_per_tile, groups, slices;
  StateCut cut;  // of the projections' L (equal)
  unsigned* counters;  // [slices] arrival counters, then [slices][NPROJ][16][2M] int32 accumulators (zero between launches)
  __nv_bfloat16* out;
  SwigluTail tail;
  NormScale scale;  // M = 1: a residual-norm reader (stage_bytes.cuh)
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Column c of x → word of the staged B operand (4 words per operand row n).
struct WgmmaByteSlot {
  __device__ __forceinline__ int operator()(int c) const {
    const int cc = c & 127;
    return (c >> 7) * 1024 + ((cc & 31) >> 1) * 64 + (cc & 1) * 32 + (cc >> 5);
  }
};

__device__ __forceinline__ int share_owner(long long x, int chunks, int groups) {
  return int(((x + 1) * groups + chunks - 1) / chunks - 1);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void wgmma_u8s8(int (&d)[4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.s8 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1;\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#endif

// kL: 0 for any L, else the projections' L (states cut by the step where it can: run_decode.cuh).
template <int K0, int K1, int NPROJ, int kL>
__global__ void __launch_bounds__(kWgmmaThreads, 1) wgmma_axis1_kernel(const WgmmaArgs a) {
  allow_dependent_grids();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint4 smem[];
  constexpr int wpb0 = kBlockT * K0 / 32, wpb1 = kBlockT * K1 / 32;
  const int C = int(a.geom[0].cols), R = int(a.geom[0].rows), M = a.M;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  // Warp-uniform by construction (shuffled from lane 0), so ptxas sees the
  // wgmma control flow as uniform and keeps the MMAs asynchronous.
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x >> 5), 0), wq = warp & 3;
  constexpr int D0 = step_positions(kL, K0), D1 = step_positions(kL, K1);
  const StateCut cut = a.cut;
  const int nblocks = C / kBlockT, cpt = a.chunks_per_tile;
  const uint32_t* codes0 = a.codes[0];
  const uint32_t* codes1 = a.codes[1];
  const size_t row_words0 = size_t(nblocks) * wpb0, row_words1 = size_t(nblocks) * wpb1;
  uint32_t* words = reinterpret_cast<uint32_t*>(smem);
  float* info = reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + size_t(C) * 32);
  float* scratch = info + 2 * kMmaMaxM;

  const int grp = int(blockIdx.x) * kWgmmaGroups + warp / 4;
  const int c_beg = grp < a.groups ? int((long long)grp * a.chunks / a.groups) : 0;
  const int c_end = grp < a.groups ? int((long long)(grp + 1) * a.chunks / a.groups) : 0;

  uint32_t g0[K0 + 1], g1[K0 + 1], u0[K1 + 1], u1[K1 + 1];
  uint32_t ng0[K0 + 1], ng1[K0 + 1], nu0[K1 + 1], nu1[K1 + 1];
  const uint32_t *grow0 = nullptr, *grow1 = nullptr, *urow0 = nullptr, *urow1 = nullptr;
  int rows_tile = -1;
  auto load_chunk = [&](int tile, int rem, uint32_t(&ga)[K0 + 1], uint32_t(&gb)[K0 + 1], uint32_t(&ua)[K1 + 1],
                        uint32_t(&ub)[K1 + 1]) {
    if (tile != rows_tile) {
      rows_tile = tile;
      const int base = tile * kGroupRows + wq * kTileRows;
      const int r0 = min(base + g, R - 1), r1 = min(base + g + 8, R - 1);
      grow0 = codes0 + size_t(r0) * row_words0, grow1 = codes0 + size_t(r1) * row_words0;
      if constexpr (NPROJ == 2) urow0 = codes1 + size_t(r0) * row_words1, urow1 = codes1 + size_t(r1) * row_words1;
    }
    // As in mma_axis1.cu: lane q's run of half h of block rem/2, wrapping for h = q = 0.
    const int h = rem & 1, run = 4 * rem + 7 - 8 * h - q;
    const bool wraps = h == 0 && q == 0;
    load_block_run<K0>(grow0 + run * K0, wraps, ga);
    load_block_run<K0>(grow1 + run * K0, wraps, gb);
    if constexpr (NPROJ == 2) {
      load_block_run<K1>(urow0 + run * K1, wraps, ua);
      load_block_run<K1>(urow1 + run * K1, wraps, ub);
    }
  };
  int tile = c_beg / cpt, rem = c_beg - tile * cpt;
  if (c_beg < c_end) load_chunk(tile, rem, g0, g1, u0, u1);
  // Programmatic launch: only code words (weights, which no earlier kernel
  // writes) are read before the wait, so their latency overlaps the previous
  // kernel's tail; x, the split scratch and out come after it, in every warp.
  wait_for_prerequisite_grids();
  // A scale is read at M = 1 only, where a gate/up pair with the gate at k = 3
  // runs on the mma.sync kernel (wgmma_axis1_serves): those instances stage
  // without it (with it, ptxas spilled in their loop at k = 3 / 3).
  constexpr bool kReadsScale = !(NPROJ == 2 && K0 == 3);
  stage_bytes_block(StageSlice{a.x, C, 0, C, C, M, nullptr}, words, 4, reinterpret_cast<int*>(info),
                    info + kMmaMaxM, scratch, WgmmaByteSlot{}, kReadsScale ? a.scale : NormScale{});
  if (c_beg >= c_end) return;
  // Descriptor: start address, leading (K) byte offset 128 between the two
  // core matrices of a step, stride (N) byte offset 256 (one 8-row group), no swizzle.
  const uint32_t b_addr = uint32_t(__cvta_generic_to_shared(words));
  const uint64_t desc0 = uint64_t((b_addr >> 4) & 0x3fff) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);

  int acc[NPROJ][4];
#pragma unroll
  for (int p = 0; p < NPROJ; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[p][e] = 0;

  for (int c = c_beg; c < c_end; ++c) {
    int ntile = tile, nrem = rem + 1;
    if (nrem == cpt) ++ntile, nrem = 0;
    if (c + 1 < c_end) load_chunk(ntile, nrem, ng0, ng1, nu0, nu1);
    const uint64_t dchunk = desc0 + uint64_t(rem * (4096 >> 4));
#pragma unroll
    for (int sp = 0; sp < 8; ++sp) {
      // Step 2sp + hh: run positions j, j + 1 (K slots q and q + 4), as the imma kernel.
      uint32_t ga[2][4], ua[2][4];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int j = 4 * sp + 2 * hh;
        ga[hh][0] = run_hash<K0, D0>(g0, j, cut), ga[hh][1] = run_hash<K0, D0>(g1, j, cut);
        ga[hh][2] = run_hash<K0, D0>(g0, j + 1, cut), ga[hh][3] = run_hash<K0, D0>(g1, j + 1, cut);
        if constexpr (NPROJ == 2) {
          ua[hh][0] = run_hash<K1, D1>(u0, j, cut), ua[hh][1] = run_hash<K1, D1>(u1, j, cut);
          ua[hh][2] = run_hash<K1, D1>(u0, j + 1, cut), ua[hh][3] = run_hash<K1, D1>(u1, j + 1, cut);
        }
      }
      wgmma_fence();
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const uint64_t d = dchunk + uint64_t((2 * sp + hh) * (256 >> 4));
        wgmma_u8s8(acc[0], ga[hh], d);
        if constexpr (NPROJ == 2) wgmma_u8s8(acc[1], ua[hh], d);
      }
      wgmma_commit();
      wgmma_wait<1>();
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

    // The warpgroup's part of this tile is done. The sums leave the wgmma
    // registers in uniform code: a read under a lane condition would make
    // ptxas serialize every wgmma of the kernel.
    wgmma_wait<0>();
    int sum[NPROJ][4];
#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) sum[p][e] = acc[p][e], acc[p][e] = 0;
    const int slice = tile * 4 + wq;  // this warp's 16 rows
    const int r0 = tile * kGroupRows + wq * kTileRows + g, r1 = r0 + 8;
    const long long first = (long long)tile * cpt;
    const int owner0 = share_owner(first, a.chunks, a.groups);
    const int contributors = share_owner(first + cpt - 1, a.chunks, a.groups) - owner0 + 1;
    bool write = true;
    // Entry e: row (e < 2 ? r0 : r1), operand column 2q + (e & 1).
    if (contributors > 1) {
      const int pc = 2 * M;  // accumulator columns: the operand columns 2m + half
      int* totals = reinterpret_cast<int*>(a.counters) + a.slices + size_t(slice) * NPROJ * kTileRows * pc;
      write = add_split_tile<NPROJ>(sum, totals, pc, a.counters + slice, unsigned(contributors));
    }
    if (write && q < M) {
      // Activation row q: entries 2rr (high half) and 2rr + 1 (low half) of row r0 / r1.
      const long long bias = (long long)kCodeBias * reinterpret_cast<const int*>(info)[q];
      const float unscale = info[kMmaMaxM + q];
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int row = rr ? r1 : r0;
        if (row >= R) continue;
        float v[NPROJ];
#pragma unroll
        for (int p = 0; p < NPROJ; ++p) {
          const long long t = 256LL * sum[p][2 * rr] + sum[p][2 * rr + 1] - bias;
          v[p] = float(t) * unscale * (__half2float(a.scales[p][row]) * kCodeRcp);
        }
        float y;
        if constexpr (NPROJ == 2) y = swiglu_tail(a.tail, v[0], v[1]);
        else y = v[0];
        a.out[size_t(q) * R + row] = __float2bfloat16_rn(y);
      }
    }
    tile = ntile, rem = nrem;
  }
#else
  __trap();  // only sm_90a builds have warpgroup MMAs; the host never picks this kernel elsewhere
#endif
}

template <int kL>
struct WgmmaInstances {
  template <int K0, int K1, int NPROJ>
  struct Of {
    static void launch(const WgmmaArgs& a, int blocks, int smem_bytes, cudaStream_t stream) {
      // Raised once to the most any plan uses (cols·32 <= kAxis1StageBytes).
      static const cudaError_t raised = cudaFuncSetAttribute(wgmma_axis1_kernel<K0, K1, NPROJ, kL>,
                                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                             wgmma_axis1_smem_bytes(kAxis1StageBytes / 32));
      if (raised != cudaSuccess)
        throw Error(std::string("wgmma axis-1 form: shared-memory opt-in failed: ") + cudaGetErrorString(raised));
      launch_programmatic(wgmma_axis1_kernel<K0, K1, NPROJ, kL>, blocks, kWgmmaThreads, smem_bytes, stream, a);
    }
  };
};

}  // namespace

// Not for gate/up at M = 1 with the gate at k = 3: there the mma.sync kernel
// measured faster on the H200 (57.9 µs against 60.1; bench/results/h200_trellis_kernels_quick.json
// at 01df9e4 and 8e389af) and on an H100 (51.3 against 54.4,
// bench/results/h100_k3_word_layout_experiment.txt), where one projection at
// k = 3 measured faster on this kernel (up 31.4 against 33.1 µs). Everywhere
// else it served, it was as fast or faster.
bool wgmma_axis1_serves(const TrellisGeometry& g, int nproj, int M, int cc_major) {
  return cc_major == 9 && g.axis == 1 && M >= 1 && M <= 4 && !(nproj == 2 && M == 1 && g.k == 3) &&
         g.cols % kBlockT == 0 &&
         g.cols * 32 <= kAxis1StageBytes;
}

WgmmaAxis1Plan plan_wgmma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count) {
  WgmmaAxis1Plan p{};
  const int tiles = int((g.rows + kGroupRows - 1) / kGroupRows);
  p.slices = tiles * 4;
  p.chunks_per_tile = int(g.cols / (kBlockT / 2));
  p.chunks = tiles * p.chunks_per_tile;
  p.groups = std::clamp(p.chunks / kMinChunksPerWarp, 1, sm_count * kWgmmaGroups);
  p.blocks = (p.groups + kWgmmaGroups - 1) / kWgmmaGroups;
  p.counters = std::size_t(p.slices) * (1 + nproj * kTileRows * 2 * M);
  p.smem_bytes = wgmma_axis1_smem_bytes(int(g.cols));
  return p;
}

void launch_wgmma_axis1(const WgmmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* x, int M,
                        uint16_t* out, SwigluTail tail, SplitScratch scratch, cudaStream_t stream,
                        const NormScale& scale) {
  if (scale.partials && (M != 1 || !wgmma_axis1_serves(w[0].geom, nproj, M, 9)))
    throw Error("wgmma axis-1 form: a residual-norm reader runs at M = 1 where this kernel serves, got M=" +
                std::to_string(M) + " nproj=" + std::to_string(nproj) + " k=" + std::to_string(w[0].geom.k));
  WgmmaArgs a{};
  set_call(a, w, nproj, x, M, out, tail, scratch.counters);
  a.scale = scale;
  a.chunks = plan.chunks;
  a.chunks_per_tile = plan.chunks_per_tile;
  a.groups = plan.groups;
  a.slices = plan.slices;
  a.cut = state_cut(w[0].geom.L);
  const int k0 = w[0].geom.k, k1 = w[nproj - 1].geom.k;
  const auto f = for_state_cut(w[0].geom.L, [&](auto kl) {
    return pick_k_instance<WgmmaInstances<decltype(kl)::value>::template Of>(k0, k1, nproj);
  });
  if (!f) throw Error("wgmma axis-1 form: no kernel for k=" + std::to_string(w[0].geom.k));
  f(a, plan.blocks, plan.smem_bytes, stream);
}

}  // namespace trellis::cuda::detail
