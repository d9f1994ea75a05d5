// Expand form: decode a whole trellis tensor to the logical bf16 matrix
// W [out_features, in_features], row-major: W_oi = bf16_rn(float(y)·f_r) with
// r the stored row (the always-correct fallback, followed by cuBLAS). Any M.
//
// Axis 1 (stored = logical): each lane decodes one 32-position run (k+1 words,
// constant shifts) into 16 packed bf16x2 words; consecutive runs are
// contiguous in the output, so a warp's 32 runs are 2 KiB of output, written
// through a per-warp shared buffer (quad-swizzled: conflict-free) as 16-byte
// stores that cover 512 contiguous bytes per instruction. Grid-stride over
// groups of 32 runs.
//
// Axis 0 (logical = transpose of stored, either layout): blocks of 256 threads
// decode a tile of 64 stored rows × 256 stored columns, each thread two stored
// rows (2p, 2p+1) of one run, so one CVT packs the bf16 pair (W_c,2p, W_c,2p+1)
// that is adjacent in the output, stored as one 32-bit word into a shared tile
// [256 columns][32 row pairs] (lanes = row pairs: conflict-free); the tile is
// then written as logical rows, 8 lanes per 128-byte row segment.
//
// Per weight: SHF, LOP3, IMAD, IDP4A, FADD, FMUL, ½ CVT, plus ½ STS (axis 0)
// or 1/8 STS (axis 1); the form is bound by the 2 bytes/weight it writes.
// Requirements: cols a multiple of 32; axis 0 rows a multiple of 8; out 16-byte aligned.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "cuda_core_kernels.cuh"
#include "run_decode.cuh"
#include "trellis/error.hpp"

namespace trellis::cuda::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kAxis0TileRows = 64;   // stored rows per tile (32 pairs = 32 lanes)
constexpr int kAxis0TileCols = 256;  // stored columns per tile (8 runs = 8 warps)
constexpr int kBlocksPerSm = 4;

struct ExpandArgs {
  TrellisGeometry geom;
  int blocks_per_row;  // geom.cols / geom.T (no 64-bit division per run in the kernels)
  const uint32_t* codes;
  const __half* scales;
  __nv_bfloat16* out;
};

// geom.block_offset(r, b) with blocks_per_row precomputed.
__device__ __forceinline__ long long block_words(const ExpandArgs& a, int r, int b, int wpb) {
  if (a.geom.block_interleave == 2) return ((long long)(b >> 1) * a.geom.rows + r) * (2 * wpb) + (b & 1) * wpb;
  return ((long long)r * a.blocks_per_row + b) * wpb;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int K>
__global__ void __launch_bounds__(kThreads) expand_axis1_kernel(const ExpandArgs a) {
  __shared__ __align__(16) uint4 buf[kWarps][128];  // 32 lanes × 64 bytes
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const TrellisGeometry& G = a.geom;
  const int C = int(G.cols), T = G.T, wpb = T * K / 32;
  const uint32_t mask = (1u << G.L) - 1u;
  const int runs_per_row = C / 32;
  const int total_runs = int(G.rows) * runs_per_row;  // < 2^31 (checked by the launcher)
  uint4* wb = buf[warp];
  uint4* out4 = reinterpret_cast<uint4*>(a.out);

  for (int base = (int(blockIdx.x) * kWarps + warp) * 32; base < total_runs; base += int(gridDim.x) * kWarps * 32) {
    const int run = min(base + lane, total_runs - 1);
    const int r = run / runs_per_row;
    const int c = (run - r * runs_per_row) * 32;
    const int b = c / T, t0 = c - b * T;
    uint32_t w[K + 1];
    load_block_run<K>(a.codes + block_words(a, r, b, wpb) + run_first_word(T, K, t0), t0 == 0, w, wpb);
    const float f = row_factor(__half2float(a.scales[r]));
    const int sw = (lane >> 1) & 3;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      uint32_t pk[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 8 * s + 2 * e;
        pk[e] = pack_bf16x2(code_float(run_state<K>(w, j, mask)) * f, code_float(run_state<K>(w, j + 1, mask)) * f);
      }
      wb[lane * 4 + (s ^ sw)] = make_uint4(pk[0], pk[1], pk[2], pk[3]);
    }
    __syncwarp();
    // Quad L of the warp's 2 KiB: run L/4, quad L%4.
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int L = 32 * s + lane, ln = L >> 2, lq = L & 3;
      if (base + ln < total_runs) out4[(long long)base * 4 + L] = wb[ln * 4 + (lq ^ ((ln >> 1) & 3))];
    }
    __syncwarp();
  }
}

template <int K>
__global__ void __launch_bounds__(kThreads) expand_axis0_kernel(const ExpandArgs a) {
  __shared__ __align__(16) uint32_t tile[kAxis0TileCols][kAxis0TileRows / 2];
  const int tid = threadIdx.x, p = tid & 31, q = tid >> 5;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols), T = G.T, wpb = T * K / 32;
  const uint32_t mask = (1u << G.L) - 1u;
  const int row_tiles = (R + kAxis0TileRows - 1) / kAxis0TileRows;
  const int col_tiles = (C + kAxis0TileCols - 1) / kAxis0TileCols;
  const long long ntiles = (long long)row_tiles * col_tiles;

  for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
    const int tr = int(t % row_tiles), tc = int(t / row_tiles);
    const int r0 = tr * kAxis0TileRows, c0 = tc * kAxis0TileCols;
    // Decode: stored rows r0+2p, r0+2p+1, stored columns c0+32q .. +31.
    {
      const int c = min(c0 + 32 * q, C - 32);
      const int b = c / T, t0 = c - b * T, w0 = run_first_word(T, K, t0);
      const int ra = min(r0 + 2 * p, R - 1), rb = min(r0 + 2 * p + 1, R - 1);
      uint32_t wa[K + 1], wbw[K + 1];
      load_block_run<K>(a.codes + block_words(a, ra, b, wpb) + w0, t0 == 0, wa, wpb);
      load_block_run<K>(a.codes + block_words(a, rb, b, wpb) + w0, t0 == 0, wbw, wpb);
      const float fa = row_factor(__half2float(a.scales[ra])), fb = row_factor(__half2float(a.scales[rb]));
      __syncthreads();  // the previous tile's reads are done
#pragma unroll
      for (int j = 0; j < 32; ++j)
        tile[32 * q + j][p] =
            pack_bf16x2(code_float(run_state<K>(wa, j, mask)) * fa, code_float(run_state<K>(wbw, j, mask)) * fb);
      __syncthreads();
    }
    // Write: logical row c0 + cl (stored column), 64 logical columns r0 .. r0+63 = 8 quads.
#pragma unroll
    for (int s = 0; s < kAxis0TileCols * 8 / kThreads; ++s) {
      const int idx = tid + kThreads * s, cl = idx >> 3, qd = idx & 7;
      const int col = c0 + cl, r = r0 + 8 * qd;
      if (col < C && r < R) {
        const uint4 v = *reinterpret_cast<const uint4*>(&tile[cl][4 * qd]);
        *reinterpret_cast<uint4*>(a.out + (size_t)col * R + r) = v;
      }
    }
  }
}

template <int K>
void launch_k(const ExpandArgs& a, int sms, cudaStream_t stream) {
  const TrellisGeometry& g = a.geom;
  if (g.axis == 1) {
    const long long groups = (g.rows * (g.cols / 32) + 31) / 32;
    const long long want = (groups + kWarps - 1) / kWarps;
    const int blocks = int(std::max<long long>(1, std::min<long long>(want, (long long)sms * kBlocksPerSm * 4)));
    expand_axis1_kernel<K><<<blocks, kThreads, 0, stream>>>(a);
  } else {
    const long long tiles = ((g.rows + kAxis0TileRows - 1) / kAxis0TileRows) *
                            ((g.cols + kAxis0TileCols - 1) / kAxis0TileCols);
    const int blocks = int(std::max<long long>(1, std::min<long long>(tiles, (long long)sms * kBlocksPerSm * 4)));
    expand_axis0_kernel<K><<<blocks, kThreads, 0, stream>>>(a);
  }
}

}  // namespace

void launch_expand_bf16(const TrellisTensorView& w, uint16_t* out, int sm_count, cudaStream_t stream) {
  const TrellisGeometry& g = w.geom;
  if (g.cols % 32 != 0) throw Error("expand form: cols must be a multiple of 32");
  if (g.axis == 0 && g.rows % 8 != 0) throw Error("expand form: axis-0 rows must be a multiple of 8");
  if (g.axis != 0 && g.axis != 1) throw Error("expand form: axis must be 0 or 1");
  if (g.rows <= 0 || g.cols <= 0) return;
  if (g.rows * (g.cols / 32) + 32LL * 8 * 1024 >= (1LL << 31)) throw Error("expand form: tensor too large");
  const int sms = std::max(sm_count, 1);
  ExpandArgs a{};
  a.geom = g;
  a.blocks_per_row = int(g.cols / g.T);
  a.codes = w.codes;
  a.scales = reinterpret_cast<const __half*>(w.scales);
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  switch (g.k) {
    case 2: launch_k<2>(a, sms, stream); break;
    case 3: launch_k<3>(a, sms, stream); break;
    case 4: launch_k<4>(a, sms, stream); break;
    default: throw Error("expand form: no kernel for k=" + std::to_string(g.k));
  }
}

}  // namespace trellis::cuda::detail
