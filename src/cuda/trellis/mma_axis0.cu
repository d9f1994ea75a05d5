// Tensor-core form, axis 0 ("down"): y = W x with Wᵀ stored coded along the
// output dim (row-major or k3 block-pair interleaved), 1..8 activation rows.
//
// Math (numerics "factored", f_r folded into the activation): with stored
// rows r (input features) and columns c (outputs),
//   D_cm = Σ_r (y_rc + 1534) · xf_mr,   xf_mr = fp16(x_mr · f_r · 2^E_m)
//   out_mc = (D_cm − 1534·Σ_r xf_mr) · 2^−E_m.
// A run decodes 32 consecutive columns of one stored row, but the MMA needs
// pairs along r (the summation axis), so each warp decodes a 16-row × 64-column
// slab (lane: row lane%16, columns 32·(lane/16)..+31) into its own shared-memory
// tile and reads it back transposed with ldmatrix.x4.trans as the A fragments of
// four 16-column MMAs; B is xf for the slab's 16 rows.
//
// Launch: persistent blocks of 8 warps; work units (64-column tile, row
// segment), contiguous per block, round-robin per warp; segments summed by the
// last-arriving warp in segment order (split_k.cuh): deterministic.
// M range 1..8; rows a multiple of 8; cols a multiple of 64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "trellis/error.hpp"

namespace trellis::cuda::detail {
namespace {

struct Axis0Args {
  TrellisGeometry geom;
  const uint32_t* codes;
  const uint32_t* xf;  // staged, [M][rows_padded / 2] words
  const float* info;
  int M, rows_padded;
  int segments, slabs_per_segment, units;
  float* partials;
  unsigned* counters;
  __nv_bfloat16* out;  // [M][cols]
};

template <int K>
__global__ void __launch_bounds__(kMmaThreads, kMmaMinBlocksPerSm) mma_axis0_kernel(const Axis0Args a) {
  __shared__ __align__(16) __half slab_tile[kMmaWarps][kSlabRows][kSlabStride];
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, warp = threadIdx.x >> 5;
  const TrellisGeometry& G = a.geom;
  const int R = int(G.rows), C = int(G.cols);
  constexpr int wpb = kBlockT * K / 32;
  const uint32_t mask = (1u << G.L) - 1u;
  const int nslabs = (R + kSlabRows - 1) / kSlabRows;
  const int rr = lane & 15, half = lane >> 4;
  const bool has_x = g < a.M;
  const uint32_t* xrow = a.xf + size_t(has_x ? g : 0) * (a.rows_padded / 2);
  __half (*tile)[kSlabStride] = slab_tile[warp];
  const __half* ld_row = &tile[(lane & 7) + 8 * (lane >> 4)][8 * ((lane >> 3) & 1)];

  // Stored row r's words for block b: base(b) + r·row_stride (both layouts).
  const int row_stride = G.block_interleave == 2 ? 2 * wpb : int(G.blocks_per_row()) * wpb;

  const UnitRange ur = block_units(a.units);
  for (int u = ur.begin + warp; u < ur.end; u += kMmaWarps) {
    const int ct = u / a.segments, seg = u - ct * a.segments;
    const int crun = ct * kSlabCols + 32 * half;
    const int b = crun / kBlockT;
    const RunWords at = run_words<K>(crun - b * kBlockT);
    const uint32_t* block_base = a.codes + G.block_offset(0, b);
    const int sbeg = seg * a.slabs_per_segment, send = min(nslabs, sbeg + a.slabs_per_segment);
    float acc[4][4] = {};
    // A ring of kAxis0Prefetch slabs in flight: a slab's code words and
    // activations are requested kAxis0Prefetch slabs before they are decoded.
    uint32_t w[kAxis0Prefetch][K + 1], bx[kAxis0Prefetch][2];
    auto load_slab = [&](int sl, uint32_t(&wv)[K + 1], uint32_t(&xv)[2]) {
      const int r = min(sl * kSlabRows + rr, R - 1);
      load_run<K>(block_base + r * row_stride, at, wv);
      const uint32_t* xs = xrow + sl * (kSlabRows / 2) + q;
      xv[0] = has_x ? __ldg(xs) : 0u;
      xv[1] = has_x ? __ldg(xs + 4) : 0u;
    };
#pragma unroll
    for (int j = 0; j < kAxis0Prefetch; ++j)
      if (sbeg + j < send) load_slab(sbeg + j, w[j], bx[j]);
    for (int sl = sbeg; sl < send; sl += kAxis0Prefetch) {
#pragma unroll
      for (int j = 0; j < kAxis0Prefetch; ++j) {
        if (sl + j >= send) break;
        uint4* dst = reinterpret_cast<uint4*>(&tile[rr][32 * half]);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          dst[i] = make_uint4(biased_pair<K>(w[j], 8 * i, mask), biased_pair<K>(w[j], 8 * i + 2, mask),
                              biased_pair<K>(w[j], 8 * i + 4, mask), biased_pair<K>(w[j], 8 * i + 6, mask));
        const uint32_t b0 = bx[j][0], b1 = bx[j][1];
        if (sl + j + kAxis0Prefetch < send) load_slab(sl + j + kAxis0Prefetch, w[j], bx[j]);
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          uint32_t af[4];
          ldmatrix_x4_trans(af, ld_row + 16 * i);
          mma_f16_16816(acc[i], af[0], af[1], af[2], af[3], b0, b1);
        }
        __syncwarp();
      }
    }

    // acc[i][e]: column ct·64 + 16i + g + 8·(e >= 2), activation row 2q + (e & 1).
    if (a.segments > 1) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = ct * kSlabCols + 16 * i + g + (e >= 2 ? 8 : 0), m = 2 * q + (e & 1);
          if (m < a.M) a.partials[(size_t(seg) * C + c) * a.M + m] = acc[i][e];
        }
      if (!arrive_last(a.counters + ct, unsigned(a.segments))) continue;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = ct * kSlabCols + 16 * i + g + (e >= 2 ? 8 : 0), m = 2 * q + (e & 1);
          if (m >= a.M) continue;
          float sum = 0.0f;
#pragma unroll 4
          for (int s = 0; s < a.segments; ++s) sum += __ldcg(a.partials + (size_t(s) * C + c) * a.M + m);
          acc[i][e] = sum;
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = ct * kSlabCols + 16 * i + g + (e >= 2 ? 8 : 0), m = 2 * q + (e & 1);
        if (m >= a.M) continue;
        const float v = (acc[i][e] - kHalfBias * a.info[2 * m]) * a.info[2 * m + 1];
        a.out[size_t(m) * C + c] = __float2bfloat16_rn(v);
      }
  }
}

}  // namespace

MmaAxis0Plan plan_mma_axis0(const TrellisGeometry& g, int M, int sm_count) {
  MmaAxis0Plan p{};
  p.col_tiles = int(g.cols / kSlabCols);
  const int nslabs = int((g.rows + kSlabRows - 1) / kSlabRows);
  p.rows_padded = nslabs * kSlabRows;
  p.blocks = sm_count * kMmaMinBlocksPerSm;
  const int want_units = p.blocks * kMmaWarps;
  const int segments = std::clamp((want_units + p.col_tiles - 1) / p.col_tiles, 1, nslabs);
  p.slabs_per_segment = (nslabs + segments - 1) / segments;
  p.segments = (nslabs + p.slabs_per_segment - 1) / p.slabs_per_segment;
  p.blocks = std::min(p.blocks, p.col_tiles * p.segments);
  p.partial_floats = p.segments > 1 ? std::size_t(p.segments) * g.cols * M : 0;
  return p;
}

void launch_mma_axis0(const MmaAxis0Plan& plan, const TrellisTensorView& w, const uint16_t* xf, const float* info,
                      int M, uint16_t* out, SplitScratch scratch, cudaStream_t stream) {
  Axis0Args a{};
  a.geom = w.geom;
  a.codes = w.codes;
  a.xf = reinterpret_cast<const uint32_t*>(xf);
  a.info = info;
  a.M = M;
  a.rows_padded = plan.rows_padded;
  a.segments = plan.segments;
  a.slabs_per_segment = plan.slabs_per_segment;
  a.units = plan.col_tiles * plan.segments;
  a.partials = scratch.partials;
  a.counters = scratch.counters;
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  switch (w.geom.k) {
    case 2: mma_axis0_kernel<2><<<plan.blocks, kMmaThreads, 0, stream>>>(a); break;
    case 3: mma_axis0_kernel<3><<<plan.blocks, kMmaThreads, 0, stream>>>(a); break;
    case 4: mma_axis0_kernel<4><<<plan.blocks, kMmaThreads, 0, stream>>>(a); break;
    default: throw Error("mma axis-0 form: no kernel for k=" + std::to_string(w.geom.k));
  }
}

}  // namespace trellis::cuda::detail
