// Tensor-core form, axis 1: y = W x (one projection) or silu(gate x)·(up x)
// (two projections, fused), for 1..8 activation rows; each weight is decoded
// once and feeds all rows through one m16n8k16 MMA.
//
// Math (numerics "factored"): the MMA accumulates Σ_c (y_rc + 1534)·xf_mc with
// A = binary16(y + 1534) (exact) and B = the staged activations xf (fp16, a
// power-of-two rescale of x, see stage_activations.cu), in fp32. Per output:
//   out_mr = (D_rm − 1534·Σ_c xf_mc) · 2^−E_m · f_r.
//
// Launch: persistent blocks of 8 warps. Work units are (16-row tile, column
// segment); a block takes a contiguous share of units, its warps take them
// round-robin. In a unit, lane (g, q) decodes rows g and g+8 of the tile,
// positions 32q..32q+31 of each 128-column chunk (two 32-position runs per
// projection), and step s of the chunk's 8 MMAs uses run positions 4s..4s+3:
// MMA K index 2q+e ↔ column 32q+4s+e and 2q+8+e ↔ 32q+4s+2+e (e = 0, 1), for A
// and B alike, so every lane reads its activations as 4 contiguous 16-byte
// loads per chunk. Segments > 1 are summed by the last-arriving warp of a tile
// in segment order (split_k.cuh), so results are deterministic, and the
// segment count depends only on the geometry, so a one-projection launch and
// a gate/up launch on the same geometry round identically (the `split` tail is
// bit-identical to two projections + swiglu).
//
// M range 1..8; rows a multiple of 8; cols a multiple of 128.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels.cuh"
#include "launch_constants.cuh"
#include "mma.cuh"
#include "run_decode.cuh"
#include "split_k.cuh"
#include "swiglu.cuh"
#include "trellis/error.hpp"

namespace trellis::cuda::detail {
namespace {

struct Axis1Args {
  TrellisGeometry geom[2];
  const uint32_t* codes[2];
  const __half* scales[2];
  const uint32_t* xf;  // staged fp16 activations as words, [M][cols/2]
  const float* info;   // per row m: {Σ xf, 2^-E}
  int M;
  int segments, blocks_per_segment, units;
  float* partials;
  unsigned* counters;
  __nv_bfloat16* out;  // [M][rows]
  SwigluTail tail;
};

// Stored-row stride and block offset in words (row-major axis-1 codes).
struct RowCodes {
  const uint32_t* base;
  int row_words;
  __device__ __forceinline__ const uint32_t* row(int r) const { return base + size_t(r) * row_words; }
};

template <int K0, int K1, int NPROJ>
__global__ void __launch_bounds__(kMmaThreads, kMmaMinBlocksPerSm) mma_axis1_kernel(const Axis1Args a) {
  constexpr int wpb0 = kBlockT * K0 / 32, wpb1 = kBlockT * K1 / 32;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int R = int(a.geom[0].rows), C = int(a.geom[0].cols);
  const uint32_t mask = (1u << a.geom[0].L) - 1u;
  const int nblocks = C / kBlockT;
  const bool has_x = g < a.M;
  const uint4* xrow = reinterpret_cast<const uint4*>(a.xf + size_t(has_x ? g : 0) * (C / 2)) + 4 * q;
  const RowCodes gate{a.codes[0], nblocks * wpb0}, up{a.codes[1], nblocks * wpb1};
  // Half h of a block: this lane's run starts at position 128h + 32q.
  const RunWords g_at[2] = {run_words<K0>(32 * q), run_words<K0>(128 + 32 * q)};
  const RunWords u_at[2] = {run_words<K1>(32 * q), run_words<K1>(128 + 32 * q)};

  const UnitRange ur = block_units(a.units);
  for (int u = ur.begin + int(threadIdx.x >> 5); u < ur.end; u += kMmaWarps) {
    const int tile = u / a.segments, seg = u - tile * a.segments;
    const int r0 = tile * kTileRows + g, r1 = r0 + 8;
    const int bbeg = seg * a.blocks_per_segment, bend = min(nblocks, bbeg + a.blocks_per_segment);
    const uint32_t* pg0 = gate.row(min(r0, R - 1)) + bbeg * wpb0;
    const uint32_t* pg1 = gate.row(min(r1, R - 1)) + bbeg * wpb0;
    const uint32_t* pu0 = up.row(min(r0, R - 1)) + bbeg * wpb1;
    const uint32_t* pu1 = up.row(min(r1, R - 1)) + bbeg * wpb1;
    const uint4* px = xrow + bbeg * (kBlockT / 8);
    // Two accumulator sets per projection (even and odd MMA steps) halve the
    // chain of dependent MMAs; they are added once, in a fixed order.
    float acc[NPROJ][4], acc_odd[NPROJ][4];
#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[p][e] = acc_odd[p][e] = 0.0f;

    // Code words of the current half-block chunk; the next chunk's are loaded
    // before this one is decoded, so HBM latency overlaps the decode.
    uint32_t g0[K0 + 1], g1[K0 + 1], u0[K1 + 1], u1[K1 + 1];
    uint32_t ng0[K0 + 1], ng1[K0 + 1], nu0[K1 + 1], nu1[K1 + 1];
    auto load_chunk = [&](int off0, int off1, const RunWords& ga, const RunWords& ua, uint32_t(&a0)[K0 + 1],
                          uint32_t(&a1)[K0 + 1], uint32_t(&b0)[K1 + 1], uint32_t(&b1)[K1 + 1]) {
      load_run<K0>(pg0 + off0, ga, a0);
      load_run<K0>(pg1 + off0, ga, a1);
      if constexpr (NPROJ == 2) {
        load_run<K1>(pu0 + off1, ua, b0);
        load_run<K1>(pu1 + off1, ua, b1);
      }
    };
    if (bbeg < bend) load_chunk(0, 0, g_at[0], u_at[0], g0, g1, u0, u1);
    for (int b = bbeg; b < bend; ++b) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t xw[16];
        if (has_x) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint4 v = __ldg(px + 16 * h + i);
            xw[4 * i] = v.x, xw[4 * i + 1] = v.y, xw[4 * i + 2] = v.z, xw[4 * i + 3] = v.w;
          }
        } else {
#pragma unroll
          for (int i = 0; i < 16; ++i) xw[i] = 0u;
        }
        if (h == 0) load_chunk(0, 0, g_at[1], u_at[1], ng0, ng1, nu0, nu1);
        else if (b + 1 < bend) load_chunk(wpb0, wpb1, g_at[0], u_at[0], ng0, ng1, nu0, nu1);
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
#pragma unroll
        for (int i = 0; i <= K0; ++i) g0[i] = ng0[i], g1[i] = ng1[i];
        if constexpr (NPROJ == 2) {
#pragma unroll
          for (int i = 0; i <= K1; ++i) u0[i] = nu0[i], u1[i] = nu1[i];
        }
      }
      pg0 += wpb0, pg1 += wpb0, pu0 += wpb1, pu1 += wpb1, px += kBlockT / 8;
    }

#pragma unroll
    for (int p = 0; p < NPROJ; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[p][e] += acc_odd[p][e];

    // Entry e of the accumulators: row (e < 2 ? r0 : r1), activation row 2q + (e & 1).
    if (a.segments > 1) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = e < 2 ? r0 : r1, m = 2 * q + (e & 1);
        if (row < R && m < a.M) {
#pragma unroll
          for (int p = 0; p < NPROJ; ++p)
            a.partials[((size_t(seg) * NPROJ + p) * R + row) * a.M + m] = acc[p][e];
        }
      }
      if (!arrive_last(a.counters + tile, unsigned(a.segments))) continue;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = e < 2 ? r0 : r1, m = 2 * q + (e & 1);
        if (row < R && m < a.M) {
#pragma unroll
          for (int p = 0; p < NPROJ; ++p) {
            float sum = 0.0f;
            for (int s = 0; s < a.segments; ++s) sum += __ldcg(a.partials + ((size_t(s) * NPROJ + p) * R + row) * a.M + m);
            acc[p][e] = sum;
          }
        }
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = e < 2 ? r0 : r1, m = 2 * q + (e & 1);
      if (row >= R || m >= a.M) continue;
      const float xsum = a.info[2 * m], unscale = a.info[2 * m + 1];
      float v[NPROJ];
#pragma unroll
      for (int p = 0; p < NPROJ; ++p)
        v[p] = (acc[p][e] - kHalfBias * xsum) * unscale * (__half2float(a.scales[p][row]) * kCodeRcp);
      float y;
      if constexpr (NPROJ == 2) y = swiglu_tail(a.tail, v[0], v[1]);
      else y = v[0];
      a.out[size_t(m) * R + row] = __float2bfloat16_rn(y);
    }
  }
}

template <int K0, int K1, int NPROJ>
void launch(const Axis1Args& a, int blocks, cudaStream_t stream) {
  mma_axis1_kernel<K0, K1, NPROJ><<<blocks, kMmaThreads, 0, stream>>>(a);
}

using Launcher = void (*)(const Axis1Args&, int, cudaStream_t);

Launcher pick(int k0, int k1, int nproj) {
#define TRELLIS_CASE(A, B) \
  if (k0 == A && k1 == B) return launch<A, B, 2>;
  if (nproj == 1) {
    if (k0 == 2) return launch<2, 2, 1>;
    if (k0 == 3) return launch<3, 3, 1>;
    if (k0 == 4) return launch<4, 4, 1>;
    return nullptr;
  }
  TRELLIS_CASE(2, 2) TRELLIS_CASE(2, 3) TRELLIS_CASE(2, 4)
  TRELLIS_CASE(3, 2) TRELLIS_CASE(3, 3) TRELLIS_CASE(3, 4)
  TRELLIS_CASE(4, 2) TRELLIS_CASE(4, 3) TRELLIS_CASE(4, 4)
#undef TRELLIS_CASE
  return nullptr;
}

}  // namespace

MmaAxis1Plan plan_mma_axis1(const TrellisGeometry& g, int nproj, int M, int sm_count) {
  MmaAxis1Plan p{};
  p.tiles = int((g.rows + kTileRows - 1) / kTileRows);
  const int nblocks = int(g.cols / kBlockT);
  p.blocks = sm_count * kMmaMinBlocksPerSm;
  // Fewest segments giving every resident warp kUnitsPerWarp units.
  const int want_units = p.blocks * kMmaWarps * kUnitsPerWarp;
  const int segments = std::clamp((want_units + p.tiles - 1) / p.tiles, 1, nblocks);
  p.blocks_per_segment = (nblocks + segments - 1) / segments;
  p.segments = (nblocks + p.blocks_per_segment - 1) / p.blocks_per_segment;
  p.blocks = std::min(p.blocks, p.tiles * p.segments);
  p.partial_floats = p.segments > 1 ? std::size_t(p.segments) * nproj * g.rows * M : 0;
  return p;
}

void launch_mma_axis1(const MmaAxis1Plan& plan, const TrellisTensorView* w, int nproj, const uint16_t* xf,
                      const float* info, int M, uint16_t* out, SwigluTail tail, SplitScratch scratch,
                      cudaStream_t stream) {
  Axis1Args a{};
  for (int p = 0; p < nproj; ++p) {
    a.geom[p] = w[p].geom;
    a.codes[p] = w[p].codes;
    a.scales[p] = reinterpret_cast<const __half*>(w[p].scales);
  }
  if (nproj == 1) a.geom[1] = a.geom[0];
  a.xf = reinterpret_cast<const uint32_t*>(xf);
  a.info = info;
  a.M = M;
  a.segments = plan.segments;
  a.blocks_per_segment = plan.blocks_per_segment;
  a.units = plan.tiles * plan.segments;
  a.partials = scratch.partials;
  a.counters = scratch.counters;
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  a.tail = tail;
  const Launcher f = pick(w[0].geom.k, w[nproj - 1].geom.k, nproj);
  if (!f) throw Error("mma axis-1 form: no kernel for k=" + std::to_string(w[0].geom.k));
  f(a, plan.blocks, stream);
}

}  // namespace trellis::cuda::detail
