// Scatter form (axis 0 on CUDA cores, "down"): y = W x with Wᵀ stored coded
// along the output dim, row-major or k3 block-pair interleaved, M 1..4.
//
// Math: stored rows r are input features, stored columns c outputs;
//   rounded  : out_mc = Σ_r bf16_rn(float(y_rc)·f_r) · x_mr       (fp32 FMA)
//   f32      : out_mc = Σ_r (float(y_rc)·f_r) · x_mr               (fp32 FMA)
//   factored : out_mc = Σ_r float(y_rc) · (x_mr·f_r)               (f_r folded into x, fp32)
// then bf16_rn.
//
// Launch: persistent blocks of 8 warps (2 per SM); work units (column tile,
// row segment), a contiguous share per block, round-robin over its warps. In
// a unit a lane owns P consecutive stored columns (P = 32: one run; P = 16:
// half a run, the lane pair sharing the run's k+1 words, the first half
// shifted by 16k bits once per row so every window shift stays a constant)
// and keeps P·M fp32 sums while it walks the segment's rows; the warp covers
// 32·P columns. Per row: k+1 code words (prefetched two rows ahead), one
// broadcast LDS.128 of the row's x values (≤ 4 rows, pre-multiplied by f_r in
// factored mode) staged per warp in shared memory 128 rows at a time. Per
// weight (M = 1, factored): SHF, LOP3, IMAD, IDP4A, FADD, FFMA. Segments > 1
// store fp32 partials [segment][col][M]; the last warp to arrive on a tile sums
// them in segment order (split_k.cuh): deterministic for a given plan, and the
// arrival counters are left at zero.
//
// Requirements: axis 0, rows even (a multiple of 8 by the format), cols a
// multiple of 32, x rows and out rows 16-byte aligned.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "cuda_core_kernels.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "trellis/error.hpp"

namespace trellis::cuda::detail {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
// Up to 128 registers per thread (P·M = 64 sums) leaves room for two blocks.
constexpr int kBlocksPerSm = 2;
// x rows staged per warp at a time (2 KiB of float4 per warp).
constexpr int kStageRows = 128;
// Work units per resident warp the plan aims for, and the fewest rows a
// segment may have (each unit writes 32·P·M partial floats; fewer rows would
// make partial traffic rival the code bytes).
constexpr int kUnitsPerWarpTarget = 4;
constexpr int kMinSegmentRows = 32;

struct ScatterArgs {
  TrellisGeometry geom;
  const uint32_t* codes;
  const __half* scales;
  const __nv_bfloat16* x;  // [M][rows]
  __nv_bfloat16* out;      // [M][cols]
  long long row_stride;    // words from a block of stored row r to the same block of row r + 1
  int segments, rows_per_segment, units;
  float* partials;
  unsigned* counters;
};

// Words a half-run lane keeps: windows at bits (15-j)·k, j < 16, L <= 16.
template <int K>
inline constexpr int kHalfWords = (15 * K + 16 + 31) / 32;

// Positions 0..15 of a run sit 16k bits above positions 16..31: move them down.
template <int K>
__device__ __forceinline__ void half_run_words(const uint32_t (&w)[K + 1], bool first_half,
                                               uint32_t (&v)[kHalfWords<K>]) {
  constexpr int s = 16 * K / 32, off = 16 * K % 32;
  static_assert(kHalfWords<K> + s + (off ? 1 : 0) <= K + 1, "half run needs more than the run's words");
#pragma unroll
  for (int i = 0; i < kHalfWords<K>; ++i) {
    uint32_t hi;
    if constexpr (off == 0) {
      hi = w[i + s];
    } else {
      hi = __funnelshift_r(w[i + s], w[i + s + 1], off);
    }
    v[i] = first_half ? hi : w[i];
  }
}

template <int K>
__device__ __forceinline__ uint32_t half_state(const uint32_t (&v)[kHalfWords<K>], int j, uint32_t mask) {
  const int bit = (15 - j) * K;
  const int wi = bit >> 5, off = bit & 31;
  uint32_t win;
  if (off == 0) win = v[wi];
  else if (wi + 1 < kHalfWords<K>) win = __funnelshift_r(v[wi], v[wi + 1], off);
  else win = v[wi] >> off;
  return win & mask;
}

// One stored row into the lane's sums.
template <int K, int P, int M, Numerics MODE>
__device__ __forceinline__ void scatter_row(const uint32_t (&w)[K + 1], bool first_half, uint32_t mask, float4 xv,
                                            float f, float (&acc)[P][M]) {
  const float xm[4] = {xv.x, xv.y, xv.z, xv.w};
  uint32_t v[P == 16 ? kHalfWords<K> : 1];
  if constexpr (P == 16) half_run_words<K>(w, first_half, v);
#pragma unroll
  for (int j = 0; j < P; j += 2) {
    float y0, y1;
    if constexpr (P == 32) {
      y0 = code_float(run_state<K>(w, j, mask));
      y1 = code_float(run_state<K>(w, j + 1, mask));
    } else {
      y0 = code_float(half_state<K>(v, j, mask));
      y1 = code_float(half_state<K>(v, j + 1, mask));
    }
    if constexpr (MODE != Numerics::factored) {
      y0 *= f;
      y1 *= f;
      if constexpr (MODE == Numerics::rounded) round_bf16_pair(y0, y1);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      acc[j][m] = fmaf(y0, xm[m], acc[j][m]);
      acc[j + 1][m] = fmaf(y1, xm[m], acc[j + 1][m]);
    }
  }
}

template <int K, int P, int M, Numerics MODE>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) scatter_kernel(const ScatterArgs a) {
  static_assert(P == 16 || P == 32);
  static_assert(M >= 1 && M <= 4);
  __shared__ __align__(16) float4 xstage[kWarps][kStageRows];
  __shared__ float fstage[kWarps][MODE == Numerics::factored ? 1 : kStageRows];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols), T = G.T;
  const int wpb = T * K / 32;
  const uint32_t mask = (1u << G.L) - 1u;
  constexpr int kTileCols = 32 * P;
  const int run = P == 32 ? lane : lane >> 1;
  const bool first_half = P == 16 && (lane & 1) == 0;
  float4* xw = xstage[warp];
  float* fw = fstage[warp];

  const UnitRange ur = block_units(a.units);
  for (int u = ur.begin + warp; u < ur.end; u += kWarps) {
    const int tile = u / a.segments, seg = u - tile * a.segments;
    const int crun = tile * kTileCols + 32 * run;
    const bool valid = crun < C;
    const int c_own = crun + (P == 16 ? 16 * (lane & 1) : 0);
    const int cc = valid ? crun : 0;  // lanes past the last column decode column 0 and store nothing
    const int b = cc / T, t0 = cc - b * T;
    const int w0 = run_first_word(T, K, t0);
    const uint32_t* __restrict__ codes = a.codes + G.block_offset(0, b) + w0;
    const long long stride = a.row_stride;
    const int rbeg = seg * a.rows_per_segment, rend = min(R, rbeg + a.rows_per_segment);

    float acc[P][M];
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[j][m] = 0.0f;

    for (int sr = rbeg; sr < rend; sr += kStageRows) {
      const int nr = min(kStageRows, rend - sr);
      __syncwarp();
      // Stage x (and f_r) of rows sr .. sr+nr-1: lane i takes rows 8i .. 8i+7, 16-byte loads.
      if (8 * lane < nr) {
        const int r8 = sr + 8 * lane;
        uint4 xr[4];
#pragma unroll
        for (int m = 0; m < 4; ++m)
          xr[m] = m < M ? __ldg(reinterpret_cast<const uint4*>(a.x + size_t(m) * R + r8)) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float f = row_factor(__half2float(a.scales[min(r8 + e, R - 1)]));
          float v[4];
#pragma unroll
          for (int m = 0; m < 4; ++m) {
            const uint32_t wsel = (e >> 1) == 0 ? xr[m].x : (e >> 1) == 1 ? xr[m].y : (e >> 1) == 2 ? xr[m].z : xr[m].w;
            const float xv = (e & 1) ? bf16_hi(wsel) : bf16_lo(wsel);
            v[m] = MODE == Numerics::factored ? xv * f : xv;
          }
          xw[8 * lane + e] = make_float4(v[0], v[1], v[2], v[3]);
          if constexpr (MODE != Numerics::factored) fw[8 * lane + e] = f;
        }
      }
      __syncwarp();

      // Rows two at a time, code words two rows ahead (clamped to the staged rows).
      const uint32_t* __restrict__ p = codes + (long long)sr * stride;
      uint32_t wa[K + 1], wb[K + 1];
      load_block_run<K>(p, t0 == 0, wa, wpb);
      load_block_run<K>(p + stride, t0 == 0, wb, wpb);
      for (int i = 0; i < nr; i += 2) {
        uint32_t ca[K + 1], cb[K + 1];
#pragma unroll
        for (int e = 0; e <= K; ++e) ca[e] = wa[e], cb[e] = wb[e];
        const int inext = min(i + 2, nr - 2);
        load_block_run<K>(p + (long long)inext * stride, t0 == 0, wa, wpb);
        load_block_run<K>(p + (long long)(inext + 1) * stride, t0 == 0, wb, wpb);
        float fa = 1.0f, fb = 1.0f;
        if constexpr (MODE != Numerics::factored) fa = fw[i], fb = fw[i + 1];
        scatter_row<K, P, M, MODE>(ca, first_half, mask, xw[i], fa, acc);
        scatter_row<K, P, M, MODE>(cb, first_half, mask, xw[i + 1], fb, acc);
      }
    }

    // acc[j][m] is column c_own + j, activation row m; flattened e = j·M + m.
    if (a.segments > 1) {
      if (valid) {
        float4* dst = reinterpret_cast<float4*>(a.partials + (size_t(seg) * C + c_own) * M);
#pragma unroll
        for (int e4 = 0; e4 < P * M / 4; ++e4) {
          const int e = 4 * e4;
          dst[e4] = make_float4(acc[e / M][e % M], acc[(e + 1) / M][(e + 1) % M], acc[(e + 2) / M][(e + 2) % M],
                                acc[(e + 3) / M][(e + 3) % M]);
        }
      }
      if (!arrive_last(a.counters + tile, unsigned(a.segments))) continue;
      if (valid) {
#pragma unroll
        for (int e4 = 0; e4 < P * M / 4; ++e4) {
          float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          for (int s = 0; s < a.segments; ++s) {
            const float4 v = __ldcg(reinterpret_cast<const float4*>(a.partials + (size_t(s) * C + c_own) * M) + e4);
            sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
          }
          const int e = 4 * e4;
          acc[e / M][e % M] = sum.x;
          acc[(e + 1) / M][(e + 1) % M] = sum.y;
          acc[(e + 2) / M][(e + 2) % M] = sum.z;
          acc[(e + 3) / M][(e + 3) % M] = sum.w;
        }
      }
    }
    if (!valid) continue;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      uint4* dst = reinterpret_cast<uint4*>(a.out + size_t(m) * C + c_own);
#pragma unroll
      for (int q = 0; q < P / 8; ++q) {
        uint32_t wv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const __nv_bfloat162 h = __floats2bfloat162_rn(acc[8 * q + 2 * e][m], acc[8 * q + 2 * e + 1][m]);
          wv[e] = *reinterpret_cast<const uint32_t*>(&h);
        }
        dst[q] = make_uint4(wv[0], wv[1], wv[2], wv[3]);
      }
    }
  }
}

using Launcher = void (*)(const ScatterArgs&, int, cudaStream_t);

template <int K, int P, int M, Numerics MODE>
void launch_one(const ScatterArgs& a, int blocks, cudaStream_t stream) {
  scatter_kernel<K, P, M, MODE><<<blocks, kThreads, 0, stream>>>(a);
}

template <int K, int P, int M>
Launcher pick_mode(Numerics mode) {
  switch (mode) {
    case Numerics::rounded: return launch_one<K, P, M, Numerics::rounded>;
    case Numerics::f32: return launch_one<K, P, M, Numerics::f32>;
    case Numerics::factored: return launch_one<K, P, M, Numerics::factored>;
  }
  return nullptr;
}

template <int K>
Launcher pick_shape(int P, int M, Numerics mode) {
  if (P == 32) {
    if (M == 1) return pick_mode<K, 32, 1>(mode);
    if (M == 2) return pick_mode<K, 32, 2>(mode);
    return nullptr;
  }
  switch (M) {
    case 1: return pick_mode<K, 16, 1>(mode);
    case 2: return pick_mode<K, 16, 2>(mode);
    case 3: return pick_mode<K, 16, 3>(mode);
    case 4: return pick_mode<K, 16, 4>(mode);
    default: return nullptr;
  }
}

struct Split {
  int segments, rows_per_segment;
};
Split split_rows(long long rows, int tiles, int want_units) {
  const int groups = int((rows + 7) / 8);
  const int most = std::max(1, int(rows / kMinSegmentRows));
  int segments = std::clamp((want_units + tiles - 1) / tiles, 1, std::min(groups, most));
  const int rps = (groups + segments - 1) / segments * 8;
  return {int((rows + rps - 1) / rps), rps};
}

}  // namespace

ScatterPlan plan_scatter(const TrellisGeometry& g, int M, int sm_count) {
  ScatterPlan p{};
  const int blocks = std::max(1, sm_count) * kBlocksPerSm;
  const int want_units = blocks * kWarps * kUnitsPerWarpTarget;
  // 32 positions per lane (fewer instructions per row) when M <= 2 and that
  // still yields the units the GPU wants; otherwise 16 (narrower tiles, more units).
  p.positions = 16;
  if (M <= 2) {
    const int tiles32 = int((g.cols + 1023) / 1024);
    const Split s = split_rows(g.rows, tiles32, want_units);
    if (tiles32 * s.segments >= want_units) p.positions = 32;
  }
  const int tile_cols = 32 * p.positions;
  p.tiles = int((g.cols + tile_cols - 1) / tile_cols);
  const Split s = split_rows(g.rows, p.tiles, want_units);
  p.segments = s.segments;
  p.rows_per_segment = s.rows_per_segment;
  p.blocks = std::min(blocks, p.tiles * p.segments);
  p.partial_floats = p.segments > 1 ? std::size_t(p.segments) * std::size_t(g.cols) * std::size_t(M) : 0;
  p.counters = p.segments > 1 ? p.tiles : 0;
  return p;
}

void launch_scatter(const ScatterPlan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                    Numerics mode, SplitScratch scratch, cudaStream_t stream) {
  const TrellisGeometry& g = w.geom;
  if (g.axis != 0) throw Error("scatter form: needs axis-0 codes");
  if (M < 1 || M > 4) throw Error("scatter form: M=" + std::to_string(M) + " outside 1..4");
  if (g.rows % 8 != 0 || g.cols % 32 != 0) throw Error("scatter form: rows must be a multiple of 8, cols of 32");
  if (g.cols * int64_t(plan.segments) * M >= (int64_t(1) << 31) || g.rows * g.cols >= (int64_t(1) << 36))
    throw Error("scatter form: tensor too large");
  ScatterArgs a{};
  a.geom = g;
  a.codes = w.codes;
  a.scales = reinterpret_cast<const __half*>(w.scales);
  a.x = reinterpret_cast<const __nv_bfloat16*>(x);
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  a.row_stride = (long long)(g.block_offset(1, 0) - g.block_offset(0, 0));
  a.segments = plan.segments;
  a.rows_per_segment = plan.rows_per_segment;
  a.units = plan.tiles * plan.segments;
  a.partials = scratch.partials;
  a.counters = scratch.counters;
  Launcher f = nullptr;
  switch (g.k) {
    case 2: f = pick_shape<2>(plan.positions, M, mode); break;
    case 3: f = pick_shape<3>(plan.positions, M, mode); break;
    case 4: f = pick_shape<4>(plan.positions, M, mode); break;
    default: break;
  }
  if (!f) throw Error("scatter form: no kernel for k=" + std::to_string(g.k) + ", M=" + std::to_string(M));
  f(a, plan.blocks, stream);
}

}  // namespace trellis::cuda::detail
