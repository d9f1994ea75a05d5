// Qwen3's per-head QK-norm and RoPE of q and k in one launch, reading the
// projections as the trellis kernels wrote them (bf16) or as fp32, writing
// fp32; v, when given, widened to fp32 in the same launch. For row m (at
// position p = pos0 + m) and every head of d = 2·half elements, the CPU
// backend's rmsnorm then rope, arithmetic for arithmetic:
//   g     = the head, as fp32
//   norm  (q_norm, k_norm given):  scale = fp32(1 / sqrt(Σ g² / d + eps))
//         (sum and root in fp64), g = (g · scale) · w   (fp32, no contraction)
//   rope  for i < half, (g_i, g_{i+half}) turned by fp32(p)·f_i
//         (rope_angle / rope_rotate, device_math.cuh: rope.cu's arithmetic)
//   v     out = float(v)
// Only the fp64 sum's order differs from the CPU's (a warp's lanes, then a
// shuffle tree). Each lane loads all it reads (its pairs and their weights;
// for v its elements) before it stores, so the warp waits on memory once;
// the weights load, and the pairs' angles are computed, before the
// programmatic wait. With fp32 inputs the outputs may be the inputs (in
// place): each lane writes only the pairs it read, after the warp's shuffles.
// Launch: one warp per (row, head) of q, then k, then v; 4 warps a block;
// pos0 from Pos (device memory for graph replays); allocates nothing.
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"
#include "trellis/error.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kWarpsPerBlock = 4;
constexpr int kHeldPairs = 4;  // pairs per lane: heads of up to 2·32·4 = 256 elements

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const uint16_t* p, int64_t i) { return bf16_bits_to_float(p[i]); }

template <typename In>
__global__ void qk_norm_rope_kernel(QkNormRopeArgs a) {
  allow_dependent_grids();
  const int64_t heads_per_row = a.heads + a.kv_heads + (a.v ? a.kv_heads : 0);
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (item >= a.M * heads_per_row) return;
  const int lane = int(threadIdx.x % 32), half = a.half, d = 2 * half;
  const int64_t m = item / heads_per_row;
  int64_t h = item % heads_per_row;
  if (h >= a.heads + a.kv_heads) {
    wait_for_prerequisite_grids();  // programmatic launch: before any global access
    h -= a.heads + a.kv_heads;
    const In* src = static_cast<const In*>(a.v) + (m * a.kv_heads + h) * d;
    float* dst = a.v_out + (m * a.kv_heads + h) * d;
    float held[2 * kHeldPairs];
#pragma unroll
    for (int j = 0; j < 2 * kHeldPairs; ++j)
      if (lane + 32 * j < d) held[j] = load(src, lane + 32 * j);
#pragma unroll
    for (int j = 0; j < 2 * kHeldPairs; ++j)
      if (lane + 32 * j < d) dst[lane + 32 * j] = held[j];
    return;
  }
  const bool is_q = h < a.heads;
  if (!is_q) h -= a.heads;
  const int64_t row_heads = is_q ? a.heads : a.kv_heads;
  const In* src = static_cast<const In*>(is_q ? a.q : a.k) + (m * row_heads + h) * d;
  float* dst = (is_q ? a.q_out : a.k_out) + (m * row_heads + h) * d;
  const float* w = is_q ? a.q_norm : a.k_norm;
  // The lane's pairs (i, i + half), i = lane + 32·j, loaded together before
  // the sum. Their norm weights and angles come before the programmatic wait:
  // weights and frequencies are written by no kernel, and the position is
  // uploaded by a copy before the step's first kernel.
  float u[kHeldPairs], v[kHeldPairs], wu[kHeldPairs], wv[kHeldPairs];
  RopeAngle angle[kHeldPairs];
  const float p = float(read_pos(a.pos) + m);
#pragma unroll
  for (int j = 0; j < kHeldPairs; ++j) {
    const int i = lane + 32 * j;
    if (i < half) {
      if (w) wu[j] = w[i], wv[j] = w[i + half];
      angle[j] = rope_angle(p, a.inv_freq[i]);
    }
  }
  wait_for_prerequisite_grids();  // programmatic launch: before any other global access
#pragma unroll
  for (int j = 0; j < kHeldPairs; ++j) {
    const int i = lane + 32 * j;
    if (i < half) u[j] = load(src, i), v[j] = load(src, i + half);
  }
  float scale = 1.0f;
  if (w) {
    double ss = 0;
#pragma unroll
    for (int j = 0; j < kHeldPairs; ++j)
      if (lane + 32 * j < half) ss += double(u[j]) * double(u[j]) + double(v[j]) * double(v[j]);
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    scale = float(1.0 / sqrt(ss / double(d) + double(a.eps)));
  }
#pragma unroll
  for (int j = 0; j < kHeldPairs; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) continue;
    float x0 = u[j], x1 = v[j];
    if (w) {
      x0 = __fmul_rn(__fmul_rn(x0, scale), wu[j]);
      x1 = __fmul_rn(__fmul_rn(x1, scale), wv[j]);
    }
    rope_rotate(x0, x1, angle[j]);
    dst[i] = x0;
    dst[i + half] = x1;
  }
}

}  // namespace

void launch_qk_norm_rope(const QkNormRopeArgs& a, cudaStream_t stream) {
  const int64_t items = int64_t(a.M) * (a.heads + a.kv_heads + (a.v ? a.kv_heads : 0));
  if (items <= 0) return;
  if (a.half < 1 || a.half > 32 * kHeldPairs)
    throw Error("cuda backend: qk_norm_rope: the head size must be 2..." + std::to_string(64 * kHeldPairs) + ", got " +
                std::to_string(2 * a.half));
  const unsigned blocks = unsigned((items + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (a.bf16_in)
    launch_programmatic(qk_norm_rope_kernel<uint16_t>, blocks, 32 * kWarpsPerBlock, 0, stream, a);
  else
    launch_programmatic(qk_norm_rope_kernel<float>, blocks, 32 * kWarpsPerBlock, 0, stream, a);
  check_launch("qk_norm_rope");
}

}  // namespace trellis::model::cuda
