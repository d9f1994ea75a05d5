// Causal GQA attention over the fp32 KV cache (contract in
// trellis/model/backend.hpp), for decode (M = 1..8 query rows) and prefill
// (any M), with the step's first position pos0 read through Pos.
//
// kv_store: rows m of k and v go to cache position pos0 + m, layout
//   [kv_head][capacity][d] (the CPU backend's).
// attention_tiles: block (split s, head h, group of 8 query rows) of 8 warps
//   whatever M (all of them stage tiles; warp w computes row m0 + w if it
//   exists); row m sees positions j < n_m = pos0 + m + 1. Split s takes the
//   key tiles t = s, s + splits, s + 2·splits, ... of 32 positions below the
//   block's longest causal length, so its work grows with the position, not
//   with the cache's capacity. Each tile's keys and values are staged in
//   shared memory (float4 loads; rows padded to d + 1 floats: conflict-free
//   reads) and shared by the block's warps. Lane j scores key j of the tile,
//   q·K[j]·(1/√d); an online softmax keeps the running max m, sum l and the
//   unnormalised output o (lane owns dims lane, lane + 32, …). With one split
//   the block writes out = o / l; with several it writes (m, l, o) and
//   attention_combine folds the splits:
//   out = Σ_s e^{m_s − M} o_s / Σ_s e^{m_s − M} l_s, M = max_s m_s.
// The split count is the caller's (cuda_backend.cpp): for a decode step it
// does not depend on pos0 (splits with no tile below the position write an
// empty partial, m = −inf), so a captured graph replays at any position.
#include <cfloat>
#include <cmath>
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kTile = kAttentionTile;
constexpr int kRowsPerBlock = 8;

__global__ void kv_store_kernel(const float* k, const float* v, int M, int kv_heads, int d, int capacity, Pos pos,
                                float* keys, float* values) {
  const int pos0 = read_pos(pos);
  const int64_t n = int64_t(M) * kv_heads * d;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int i = int(e % d);
    const int g = int((e / d) % kv_heads), m = int(e / (int64_t(d) * kv_heads));
    const int64_t at = (int64_t(g) * capacity + pos0 + m) * d + i;
    keys[at] = k[e];
    values[at] = v[e];
  }
}

template <int D>
__global__ void attention_tiles_kernel(AttentionArgs a) {
  constexpr int kPer = D / 32;
  constexpr int kVec = D / 4;  // float4s per key row
  extern __shared__ float smem[];
  float* ks = smem;                          // [kTile][D + 1]
  float* vs = ks + kTile * (D + 1);          // [kTile][D + 1]
  float* qs = vs + kTile * (D + 1);          // [kRowsPerBlock][D]
  const int s = blockIdx.x, h = blockIdx.y, m0 = blockIdx.z * kRowsPerBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rows = min(kRowsPerBlock, a.M - m0);
  const int m = m0 + warp;
  const bool active = warp < rows;
  const int pos0 = read_pos(a.pos);
  const int g = h / (a.heads / a.kv_heads);
  const int n_last = pos0 + m0 + rows;  // the longest causal length in the block
  const int n_m = pos0 + m + 1;
  const float scale = rsqrtf(float(D));

  if (active)
    for (int i = lane; i < D; i += 32) qs[warp * D + i] = a.q[(int64_t(m) * a.heads + h) * D + i];
  float run_max = -INFINITY, run_sum = 0.0f, o[kPer];
  for (int c = 0; c < kPer; ++c) o[c] = 0.0f;

  const float* K = a.keys + int64_t(g) * a.capacity * D;
  const float* V = a.values + int64_t(g) * a.capacity * D;
  for (int t = s * kTile; t < n_last; t += a.splits * kTile) {
    __syncthreads();
    const int n_tile = min(kTile, n_last - t);
    for (int e = threadIdx.x; e < n_tile * kVec; e += blockDim.x) {
      const int j = e / kVec, i = (e % kVec) * 4;
      const float4 kv = *reinterpret_cast<const float4*>(K + int64_t(t + j) * D + i);
      const float4 vv = *reinterpret_cast<const float4*>(V + int64_t(t + j) * D + i);
      float* kd = ks + j * (D + 1) + i;
      float* vd = vs + j * (D + 1) + i;
      kd[0] = kv.x, kd[1] = kv.y, kd[2] = kv.z, kd[3] = kv.w;
      vd[0] = vv.x, vd[1] = vv.y, vd[2] = vv.z, vd[3] = vv.w;
    }
    __syncthreads();
    if (!active) continue;
    const int valid = min(n_tile, n_m - t);  // keys of this tile row m may see
    if (valid <= 0) continue;
    float score = -INFINITY;
    if (lane < valid) {
      float acc = 0.0f;
      const float* q = qs + warp * D;
      const float* kr = ks + lane * (D + 1);
#pragma unroll 8
      for (int i = 0; i < D; ++i) acc += q[i] * kr[i];
      score = acc * scale;
    }
    float tile_max = score;
    for (int off = 16; off > 0; off >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
    const float new_max = fmaxf(run_max, tile_max);
    const float p = lane < valid ? expf(score - new_max) : 0.0f;
    float p_sum = p;
    for (int off = 16; off > 0; off >>= 1) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, off);
    const float rescale = expf(run_max - new_max);  // 0 on the first tile (run_max = −inf)
    run_sum = run_sum * rescale + p_sum;
    for (int c = 0; c < kPer; ++c) o[c] *= rescale;
    for (int j = 0; j < valid; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const float* vr = vs + j * (D + 1);
      for (int c = 0; c < kPer; ++c) o[c] += pj * vr[lane + 32 * c];
    }
    run_max = new_max;
  }
  if (!active) return;
  if (a.splits == 1) {
    float* out = a.out + (int64_t(m) * a.heads + h) * D;
    const float inv = 1.0f / run_sum;
    for (int c = 0; c < kPer; ++c) out[lane + 32 * c] = o[c] * inv;
    return;
  }
  float* part = a.partials + ((int64_t(m) * a.heads + h) * a.splits + s) * (D + 2);
  if (lane == 0) {
    part[0] = run_max;
    part[1] = run_sum;
  }
  for (int c = 0; c < kPer; ++c) part[2 + lane + 32 * c] = o[c];
}

// One block of d threads per (row, head).
__global__ void attention_combine_kernel(const float* partials, int heads, int d, int splits, float* out) {
  const int64_t mh = blockIdx.x;
  const float* p = partials + mh * splits * (d + 2);
  float top = -INFINITY;
  for (int s = 0; s < splits; ++s) top = fmaxf(top, p[s * (d + 2)]);
  float num = 0.0f, den = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float ms = p[s * (d + 2)];
    if (ms == -INFINITY) continue;
    const float w = expf(ms - top);
    den += w * p[s * (d + 2) + 1];
    num += w * p[s * (d + 2) + 2 + threadIdx.x];
  }
  out[mh * d + threadIdx.x] = num / den;
}

template <int D>
void launch_tiles(const AttentionArgs& a, cudaStream_t stream) {
  const size_t smem = (2 * kTile * (D + 1) + kRowsPerBlock * D) * sizeof(float);
  static const cudaError_t attr =
      cudaFuncSetAttribute(attention_tiles_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  check_cuda(attr, "cudaFuncSetAttribute (attention shared memory)");
  const dim3 grid(unsigned(a.splits), unsigned(a.heads), unsigned((a.M + kRowsPerBlock - 1) / kRowsPerBlock));
  attention_tiles_kernel<D><<<grid, 32 * kRowsPerBlock, smem, stream>>>(a);
  check_launch("attention_tiles");
}

}  // namespace

bool attention_supports_head_dim(int d) { return d == 64 || d == 128 || d == 256; }

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (!attention_supports_head_dim(a.d))
    throw Error("cuda backend: attention: head_dim " + std::to_string(a.d) + " is not supported (64, 128 or 256)");
  const int64_t n = int64_t(a.M) * a.kv_heads * a.d;
  kv_store_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(a.k, a.v, a.M, a.kv_heads, a.d, a.capacity, a.pos,
                                                             a.keys, a.values);
  check_launch("kv_store");
  switch (a.d) {
    case 64: launch_tiles<64>(a, stream); break;
    case 128: launch_tiles<128>(a, stream); break;
    default: launch_tiles<256>(a, stream); break;
  }
  if (a.splits > 1) {
    attention_combine_kernel<<<unsigned(a.M * a.heads), unsigned(a.d), 0, stream>>>(a.partials, a.heads, a.d,
                                                                                     a.splits, a.out);
    check_launch("attention_combine");
  }
}

}  // namespace trellis::model::cuda
