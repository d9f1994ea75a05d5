// Causal GQA attention over the fp32 KV cache (contract in
// trellis/model/backend.hpp), for decode (M = 1..8 query rows) and prefill
// (any M), with the step's first position pos0 read through Pos.
//
// One launch (plus attention_combine when split): block (kv head g, split s,
// group of 8 query rows) of 8 warps, g the grid's fastest index so that the
// low splits (the only ones with key tiles at a short position) are the first
// blocks launched, spread over the SMs. The query rows of kv head g are the
// M·hpg pairs (m, head g·hpg + i), hpg = heads / kv_heads, row r ↔ m = r / hpg,
// i = r mod hpg, so the heads sharing a kv head share its staged key tiles
// (a decode step's M = 1 and hpg = 5 keep 5 warps busy on one tile). Warp w
// computes row 8·group + w if it exists; row m sees positions j < n_m =
// pos0 + m + 1. Split s takes the key tiles t = s, s + splits, ... of 32
// positions below the block's longest causal length, so its work grows with
// the position, not with the cache's capacity. A tile's keys and values are
// staged in shared memory (16-byte cp.async copies, all of a thread's in
// flight together; rows padded to d + 4 floats: 16-byte aligned and
// conflict-free for the lanes' float4 reads); the step's own
// positions j >= pos0 are read from k and v, not from the cache, and the
// blocks of split 0 store them into the cache ([kv_head][capacity][d], the
// CPU backend's layout) in the same launch: no block of the launch reads
// those cache rows. Lane j scores key j of the tile, q·K[j]·(1/√d) (four
// partial sums over the dims, added in a fixed order); an online softmax
// keeps the running max m, sum l and the unnormalised output o (lane owns
// dims [d/32 · lane, d/32 · (lane + 1))). With one split the block writes
// out = o / l; with several it writes (m, l, o) and attention_combine folds
// the splits: out = Σ_s e^{m_s − M} o_s / Σ_s e^{m_s − M} l_s, M = max_s m_s.
// With out_bf16 the kernel that writes out also writes bf16_rne(out) there
// (the o projection's kernel input, f32_to_bf16's values).
// The split count is the caller's (cuda_backend.cpp): for a decode step it
// does not depend on pos0 (splits with no tile below the position write an
// empty partial, m = −inf), so a captured graph replays at any position.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include <cuda_pipeline_primitives.h>

#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kTile = kAttentionTile;
constexpr int kRowsPerBlock = kAttentionRowsPerBlock;

template <int D>
constexpr int kRowStride = D + 4;  // staged key/value row (floats)

// 16 bytes global → shared without a register round trip (cp.async): a
// thread's copies of a tile are all in flight together; __pipeline_commit and
// __pipeline_wait_prior(0) before the barrier that publishes them.
__device__ __forceinline__ void copy16_async(float* shared, const float* global) {
  __pipeline_memcpy_async(shared, global, 16);
}

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
  const int g = blockIdx.x, s = blockIdx.y, r0 = blockIdx.z * kRowsPerBlock;
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
  if (active && s * kTile < n_last)  // waited for with the first tile's copies
    for (int i = 4 * lane; i < D; i += 128) copy16_async(qs + warp * D + i, a.q + (int64_t(m) * a.heads + h) * D + i);
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
      copy16_async(ks + j * S + i, kr + i);
      copy16_async(vs + j * S + i, vr + i);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
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
  if (!active) return;
  if (a.splits == 1) {
    const int64_t at = (int64_t(m) * a.heads + h) * D + kPer * lane;
    const float inv = 1.0f / run_sum;
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      a.out[at + c] = o[c] * inv;
      if (a.out_bf16) a.out_bf16[at + c] = float_to_bf16_bits(o[c] * inv);
    }
    return;
  }
  float* part = a.partials + ((int64_t(m) * a.heads + h) * a.splits + s) * (D + 2);
  if (lane == 0) {
    part[0] = run_max;
    part[1] = run_sum;
  }
#pragma unroll
  for (int c = 0; c < kPer; ++c) part[2 + kPer * lane + c] = o[c];
}

// One block per (row, head) of d·G threads, G = kCombineGroups(d) groups of
// d. Thread s (strided) forms split s's weight w_s = e^{m_s − M} and w_s·l_s
// once, into shared memory; thread (group j, dim i) sums w_s·o_s[i] over the
// splits s ≡ j (mod G) in split order (its first kHeldSplits loaded with
// (m_s, l_s) at the start, before the block's reductions),
// and group 0 adds the G partial sums in group order and divides by Σ_s w_s·l_s
// (split order). Empty splits (m_s = −inf) have w_s = 0 and l_s = o_s = 0, so
// the kernel reads only the splits below ceil((pos0 + M) / kTile), the ones a
// key tile reached (pos0 read at run time: a captured step's combine reads
// fewer partials at short positions), with the same sums bit for bit.
constexpr int kCombineMaxThreads = 1024;
constexpr int kHeldSplits = 8;  // a thread's o_s values held in registers (64 splits at 8 groups)
inline int combine_groups(int d) { return std::max(1, std::min(8, kCombineMaxThreads / d)); }

__global__ void attention_combine_kernel(const float* partials, int d, int splits, int M, Pos pos, float* out,
                                         uint16_t* out_bf16) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  extern __shared__ float combine_smem[];  // [splits] weights, [splits] weighted sums, [groups][d] partial outputs
  __shared__ float warp_max[kCombineMaxThreads / 32];
  float* weight = combine_smem;
  float* weighted_sum = weight + splits;
  float* group_num = weighted_sum + splits;
  const int64_t mh = blockIdx.x;
  const int tid = int(threadIdx.x), lane = tid % 32, warps = int(blockDim.x) / 32;
  const int groups = int(blockDim.x) / d, group = tid / d, dim = tid % d;
  const float* p = partials + mh * splits * (d + 2);
  // Every load before any use: split tid's (m, l) and the first kHeldSplits
  // of the thread's o_s[dim], so the block waits on memory once (splits past
  // the block's threads, tid + blockDim·i, are read in turn). Every split
  // wrote its partial, so these loads need not wait for pos.
  const int written = splits;
  float m_s = -INFINITY, l_s = 0.0f, held[kHeldSplits];
  if (tid < written) m_s = p[tid * (d + 2)], l_s = p[tid * (d + 2) + 1];
#pragma unroll
  for (int j = 0; j < kHeldSplits; ++j) {
    const int s = group + j * groups;
    held[j] = s < written ? p[s * (d + 2) + 2 + dim] : 0.0f;
  }
  splits = min(splits, (read_pos(pos) + M + kTile - 1) / kTile);  // the splits a tile reached
  if (tid >= splits) m_s = -INFINITY;
  float top = m_s;
  for (int s = tid + int(blockDim.x); s < splits; s += int(blockDim.x)) top = fmaxf(top, p[s * (d + 2)]);
  for (int off = 16; off > 0; off >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, off));
  if (lane == 0) warp_max[tid / 32] = top;
  __syncthreads();
  top = warp_max[0];
  for (int i = 1; i < warps; ++i) top = fmaxf(top, warp_max[i]);
  const auto weigh = [&](int s, float ms, float ls) {
    const float w = ms == -INFINITY ? 0.0f : expf(ms - top);
    weight[s] = w;
    weighted_sum[s] = w * ls;
  };
  if (tid < splits) weigh(tid, m_s, l_s);
  for (int s = tid + int(blockDim.x); s < splits; s += int(blockDim.x)) weigh(s, p[s * (d + 2)], p[s * (d + 2) + 1]);
  __syncthreads();
  float num = 0.0f;
#pragma unroll
  for (int j = 0; j < kHeldSplits; ++j) {
    const int s = group + j * groups;
    if (s < splits) num += weight[s] * held[j];
  }
  for (int s = group + kHeldSplits * groups; s < splits; s += groups) num += weight[s] * p[s * (d + 2) + 2 + dim];
  group_num[group * d + dim] = num;
  __syncthreads();
  if (group != 0) return;
  float den = 0.0f;
  for (int s = 0; s < splits; ++s) den += weighted_sum[s];
  num = group_num[dim];
  for (int j = 1; j < groups; ++j) num += group_num[j * d + dim];
  out[mh * d + dim] = num / den;
  if (out_bf16) out_bf16[mh * d + dim] = float_to_bf16_bits(num / den);
}

template <int D>
void launch_tiles(const AttentionArgs& a, cudaStream_t stream) {
  const size_t smem = (2 * kTile * kRowStride<D> + kRowsPerBlock * D) * sizeof(float);
  static const cudaError_t attr =
      cudaFuncSetAttribute(attention_tiles_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  check_cuda(attr, "cudaFuncSetAttribute (attention shared memory)");
  const dim3 grid(unsigned(a.kv_heads), unsigned(a.splits), unsigned(attention_row_groups(a.M, a.heads, a.kv_heads)));
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
  if (a.splits > 1) {
    const int groups = combine_groups(a.d);
    const size_t smem = (2 * size_t(a.splits) + size_t(groups) * a.d) * sizeof(float);
    launch_programmatic(attention_combine_kernel, unsigned(a.M * a.heads), unsigned(groups * a.d), smem, stream,
                        a.partials, a.d, a.splits, a.M, a.pos, a.out, a.out_bf16);
    check_launch("attention_combine");
  }
}

}  // namespace trellis::model::cuda
