// Causal GQA attention over the fp32 KV cache (contract in
// trellis/model/backend.hpp), for decode (M = 1..8 query rows) and prefill
// (any M), with the step's first position pos0 read through Pos.
//
// One launch: block (split s, kv head g,
// group of 8 query rows) of 8 warps. The query rows of kv head g are the
// M·hpg pairs (m, head g·hpg + i), hpg = heads / kv_heads, row r ↔ m = r / hpg,
// i = r mod hpg, so the heads sharing a kv head share its staged key tiles
// (a decode step's M = 1 and hpg = 5 keep 5 warps busy on one tile). Warp w
// computes row 8·group + w if it exists; row m sees positions j < n_m =
// pos0 + m + 1. Split s takes the key tiles t = s, s + splits, ... of 32
// positions below the block's longest causal length, so its work grows with
// the position, not with the cache's capacity. A tile's keys and values are
// staged in shared memory (float4 loads, rows padded to d + 4 floats: 16-byte
// aligned and conflict-free for the lanes' float4 reads); the step's own
// positions j >= pos0 are read from k and v, not from the cache, and the
// blocks of split 0 store them into the cache ([kv_head][capacity][d], the
// CPU backend's layout) in the same launch: no block of the launch reads
// those cache rows. Lane j scores key j of the tile, q·K[j]·(1/√d) (four
// partial sums over the dims, added in a fixed order); an online softmax
// keeps the running max m, sum l and the unnormalised output o (lane owns
// dims [d/32 · lane, d/32 · (lane + 1))). With one split the block writes
// out = o / l; with several it writes (m, l, o), and the last of the splits'
// blocks of (kv head, row group) to arrive (trellis/cuda/block_arrival.cuh)
// folds them, warp per row, lane per output dims, in split order:
//   out = Σ_s e^{m_s − M} o_s / Σ_s e^{m_s − M} l_s,  M = max_s m_s
// over the splits s < ⌈(pos0 + M_rows) / 32⌉ (the ones a tile reached: the
// others are empty, m_s = −inf, weight 0). Which block arrives last does not
// change the sums. The split count is the caller's (cuda_backend.cpp): for a
// decode step it does not depend on pos0 (splits with no tile below the
// position write an empty partial), so a captured graph replays at any
// position.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"
#include "trellis/cuda/block_arrival.cuh"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kTile = kAttentionTile;
constexpr int kRowsPerBlock = kAttentionRowsPerBlock;

template <int D>
constexpr int kRowStride = D + 4;  // staged key/value row (floats)

template <int D>
__global__ void attention_tiles_kernel(AttentionArgs a) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  constexpr int kPer = D / 32;  // output dims per lane
  constexpr int kVec = D / 4;   // float4s per key row
  constexpr int S = kRowStride<D>;
  extern __shared__ float4 smem4[];
  float* ks = reinterpret_cast<float*>(smem4);  // [kTile][S]
  float* vs = ks + kTile * S;                     // [kTile][S]
  float* qs = vs + kTile * S;                     // [kRowsPerBlock][D]
  const int s = blockIdx.x, g = blockIdx.y, r0 = blockIdx.z * kRowsPerBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int hpg = a.heads / a.kv_heads;
  const int rows = min(kRowsPerBlock, a.M * hpg - r0);
  const bool active = warp < rows;
  const int r = r0 + (active ? warp : 0);
  const int m = r / hpg, h = g * hpg + r % hpg;
  const int pos0 = read_pos(a.pos);
  const int n_last = pos0 + (r0 + rows - 1) / hpg + 1;  // the longest causal length in the block
  const int n_m = pos0 + m + 1;
  const float scale = rsqrtf(float(D));
  float* K = a.keys + int64_t(g) * a.capacity * D;
  float* V = a.values + int64_t(g) * a.capacity * D;
  // The step's own key/value row p >= pos0 of this kv head.
  const auto fresh = [&](const float* kv, int p) { return kv + (int64_t(p - pos0) * a.kv_heads + g) * D; };

  if (s == 0) {
    // Rows m' whose first query row m'·hpg is in this group go to the cache.
    const int m_beg = (r0 + hpg - 1) / hpg, m_end = min(a.M, (r0 + kRowsPerBlock + hpg - 1) / hpg);
    for (int e = threadIdx.x; e < (m_end - m_beg) * kVec; e += blockDim.x) {
      const int p = pos0 + m_beg + e / kVec, i = (e % kVec) * 4;
      *reinterpret_cast<float4*>(K + int64_t(p) * D + i) = *reinterpret_cast<const float4*>(fresh(a.k, p) + i);
      *reinterpret_cast<float4*>(V + int64_t(p) * D + i) = *reinterpret_cast<const float4*>(fresh(a.v, p) + i);
    }
  }
  if (active)
    for (int i = lane; i < D; i += 32) qs[warp * D + i] = a.q[(int64_t(m) * a.heads + h) * D + i];
  float run_max = -INFINITY, run_sum = 0.0f, o[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) o[c] = 0.0f;

  for (int t = s * kTile; t < n_last; t += a.splits * kTile) {
    __syncthreads();
    const int n_tile = min(kTile, n_last - t);
    for (int e = threadIdx.x; e < n_tile * kVec; e += blockDim.x) {
      const int j = e / kVec, i = (e % kVec) * 4, p = t + j;
      const float* kr = p < pos0 ? K + int64_t(p) * D : fresh(a.k, p);
      const float* vr = p < pos0 ? V + int64_t(p) * D : fresh(a.v, p);
      *reinterpret_cast<float4*>(ks + j * S + i) = *reinterpret_cast<const float4*>(kr + i);
      *reinterpret_cast<float4*>(vs + j * S + i) = *reinterpret_cast<const float4*>(vr + i);
    }
    __syncthreads();
    if (!active) continue;
    const int valid = min(n_tile, n_m - t);  // keys of this tile row m may see
    if (valid <= 0) continue;
    float score = -INFINITY;
    if (lane < valid) {
      const float4* q4 = reinterpret_cast<const float4*>(qs + warp * D);
      const float4* k4 = reinterpret_cast<const float4*>(ks + lane * S);
      float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const float4 qv = q4[i], kv = k4[i];
        part[i % 4] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
      }
      score = ((part[0] + part[1]) + (part[2] + part[3])) * scale;
    }
    float tile_max = score;
    for (int off = 16; off > 0; off >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
    const float new_max = fmaxf(run_max, tile_max);
    const float p = lane < valid ? expf(score - new_max) : 0.0f;
    float p_sum = p;
    for (int off = 16; off > 0; off >>= 1) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, off);
    const float rescale = expf(run_max - new_max);  // 0 on the first tile (run_max = −inf)
    run_sum = run_sum * rescale + p_sum;
#pragma unroll
    for (int c = 0; c < kPer; ++c) o[c] *= rescale;
    for (int j = 0; j < valid; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const float* vr = vs + j * S + kPer * lane;
      if constexpr (kPer == 2) {
        const float2 vv = *reinterpret_cast<const float2*>(vr);
        o[0] += pj * vv.x, o[1] += pj * vv.y;
      } else {
#pragma unroll
        for (int c = 0; c < kPer; c += 4) {
          const float4 vv = *reinterpret_cast<const float4*>(vr + c);
          o[c] += pj * vv.x, o[c + 1] += pj * vv.y, o[c + 2] += pj * vv.z, o[c + 3] += pj * vv.w;
        }
      }
    }
    run_max = new_max;
  }
  if (a.splits == 1) {
    if (!active) return;
    float* out = a.out + (int64_t(m) * a.heads + h) * D + kPer * lane;
    const float inv = 1.0f / run_sum;
#pragma unroll
    for (int c = 0; c < kPer; ++c) out[c] = o[c] * inv;
    return;
  }
  float* row_parts = a.partials + (int64_t(m) * a.heads + h) * a.splits * (D + 2);
  if (active) {
    float* part = row_parts + s * (D + 2);
    if (lane == 0) {
      part[0] = run_max;
      part[1] = run_sum;
    }
#pragma unroll
    for (int c = 0; c < kPer; ++c) part[2 + kPer * lane + c] = o[c];
  }
  if (!::trellis::cuda::block_arrive_last(a.arrivals + g * gridDim.z + blockIdx.z, unsigned(a.splits))) return;
  if (!active) return;
  // The last block to arrive: this row's splits folded in split order.
  const int reached = min(a.splits, (pos0 + a.M + kTile - 1) / kTile);
  float top = -INFINITY;
  for (int j = lane; j < reached; j += 32) top = fmaxf(top, __ldcg(row_parts + j * (D + 2)));
  for (int off = 16; off > 0; off >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, off));
  float den = 0.0f, num[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) num[c] = 0.0f;
#pragma unroll 4
  for (int j = 0; j < reached; ++j) {
    const float* pj = row_parts + j * (D + 2);
    const float mj = __ldcg(pj);
    const float w = mj == -INFINITY ? 0.0f : expf(mj - top);
    den += w * __ldcg(pj + 1);
#pragma unroll
    for (int c = 0; c < kPer; ++c) num[c] += w * __ldcg(pj + 2 + kPer * lane + c);
  }
  float* out = a.out + (int64_t(m) * a.heads + h) * D + kPer * lane;
#pragma unroll
  for (int c = 0; c < kPer; ++c) out[c] = num[c] / den;
}

template <int D>
void launch_tiles(const AttentionArgs& a, cudaStream_t stream) {
  const size_t smem = (2 * kTile * kRowStride<D> + kRowsPerBlock * D) * sizeof(float);
  static const cudaError_t attr =
      cudaFuncSetAttribute(attention_tiles_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  check_cuda(attr, "cudaFuncSetAttribute (attention shared memory)");
  const dim3 grid(unsigned(a.splits), unsigned(a.kv_heads), unsigned(attention_row_groups(a.M, a.heads, a.kv_heads)));
  launch_programmatic(attention_tiles_kernel<D>, grid, 32 * kRowsPerBlock, smem, stream, a);
  check_launch("attention_tiles");
}

}  // namespace

bool attention_supports_head_dim(int d) { return d == 64 || d == 128 || d == 256; }

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (!attention_supports_head_dim(a.d))
    throw Error("cuda backend: attention: head_dim " + std::to_string(a.d) + " is not supported (64, 128 or 256)");
  switch (a.d) {
    case 64: launch_tiles<64>(a, stream); break;
    case 128: launch_tiles<128>(a, stream); break;
    default: launch_tiles<256>(a, stream); break;
  }
}

}  // namespace trellis::model::cuda
