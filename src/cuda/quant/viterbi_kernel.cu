// The tail-biting Viterbi encode kernel (math in include/trellis/cuda/viterbi.hpp,
// launch shapes in viterbi_kernel.hpp).
//
// One thread block codes one trellis block at a time. Thread `tid` owns the
// heads h = tid + i·threads (i < HPT) and their successors h·2^k + b, in every
// pass: it reads the 2^k predecessor costs of each of its heads, keeps the
// minimum (and its index j as the back-pointer byte), and writes its
// successors' costs. Costs are stored at swz(s) = s ^ ((s >> 5) & 31): a
// permutation inside each 32-float row that makes both the reads (lanes on
// consecutive heads) and the writes (lanes on states 2^k apart) hit 32
// distinct banks. One barrier per trellis step (two cost arrays alternate).
// Arithmetic uses __fsub_rn/__fmul_rn/__fadd_rn: the CPU encoder's roundings
// (it is built without contraction), so both choose the same states.
#include <math_constants.h>

#include <algorithm>
#include <string>

#include "../trellis/cuda_check.hpp"
#include "trellis/code.hpp"
#include "trellis/error.hpp"
#include "viterbi_kernel.hpp"

namespace trellis::cuda::detail {
namespace {

// Shared-cost form: 2^L/16 threads (L ≤ 12), at least 2 resident per SM so
// one block's barriers and backtrack overlap another's steps (≤ 128
// registers: the 16 code values and the cost offsets stay in registers).
constexpr int kSharedThreadsMax = 256;
constexpr int kSharedMinBlocks = 2;
constexpr int kSharedMaxL = 12;
// Device-cost form: 2^L/64 threads (L = 13 … 16).
constexpr int kGlobalThreadsMax = 1024;

__device__ __forceinline__ uint32_t swz(uint32_t s) { return s ^ ((s >> 5) & 31u); }

// y(s), or y(bit-reverse_L(s)) for the reversed pass of the overlap bounds.
__device__ __forceinline__ float code_y(uint32_t s, bool reversed, int L) {
  if (reversed) s = __brev(s) >> (32 - L);
  return float(code_value(s));
}

// Reductions over the thread block (threads a multiple of 32); every thread
// gets the result; `red` is reusable once they return.
__device__ float block_min(float x, float* red) {
  for (int d = 16; d > 0; d >>= 1) x = fminf(x, __shfl_xor_sync(0xffffffffu, x, d));
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) red[warp] = x;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < warps; ++w) r = fminf(r, red[w]);
  __syncthreads();
  return r;
}

__device__ double block_sum(double x, double* red) {
  for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) red[warp] = x;
  __syncthreads();
  double r = 0.0;
  for (int w = 0; w < warps; ++w) r += red[w];
  __syncthreads();
  return r;
}

// Smallest (value, index), lowest index on ties.
__device__ __forceinline__ bool before(float a, uint32_t ia, float b, uint32_t ib) {
  return a < b || (a == b && ia < ib);
}

__device__ void block_argmin(float& x, uint32_t& ix, float* redf, uint32_t* redi) {
  for (int d = 16; d > 0; d >>= 1) {
    const float y = __shfl_xor_sync(0xffffffffu, x, d);
    const uint32_t iy = __shfl_xor_sync(0xffffffffu, ix, d);
    if (before(y, iy, x, ix)) x = y, ix = iy;
  }
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) redf[warp] = x, redi[warp] = ix;
  __syncthreads();
  x = redf[0];
  ix = redi[0];
  for (int w = 1; w < warps; ++w)
    if (before(redf[w], redi[w], x, ix)) x = redf[w], ix = redi[w];
  __syncthreads();
}

// The heads a thread owns and the add-compare-select over them.
template <int K, int HPT, bool kShared>
struct Heads {
  // The shared-cost form keeps y in registers (indexed by unrolled heads);
  // the device-cost form takes its heads one by one to bound the registers.
  static constexpr int kHeadUnroll = kShared ? HPT : 1;
  uint32_t H;
  int L, threads, tid;
  bool reversed = false;
  float yv[HPT][K];  // shared-cost form: y of the owned successors

  __device__ float y(int i, int b, uint32_t s) const {
    if constexpr (kShared) return yv[i][b];
    return code_y(s, reversed, L);
  }

  __device__ void use_table(bool rev) {
    reversed = rev;
    if constexpr (kShared) {
#pragma unroll
      for (int i = 0; i < HPT; ++i) {
        const uint32_t h = uint32_t(tid + i * threads);
#pragma unroll
        for (int b = 0; b < K; ++b) yv[i][b] = h < H ? code_y(h * K + b, rev, L) : 0.0f;
      }
    }
  }

  // cost[s] = (y(s) − vt)², or +inf unless s's head is `only` (~0u: any).
  __device__ void init(float* cost, float vt, uint32_t only) const {
#pragma unroll(kHeadUnroll)
    for (int i = 0; i < HPT; ++i) {
      const uint32_t h = uint32_t(tid + i * threads);
      if (h >= H) continue;
#pragma unroll
      for (int b = 0; b < K; ++b) {
        const uint32_t s = h * K + b;
        const float d = __fsub_rn(y(i, b, s), vt);
        cost[swz(s)] = (only == ~0u || only == h) ? __fmul_rn(d, d) : CUDART_INF_F;
      }
    }
  }

  template <bool kBack>
  __device__ void step(const float* c, float* n, float vt, uint8_t* back_row) const {
#pragma unroll(kHeadUnroll)
    for (int i = 0; i < HPT; ++i) {
      const uint32_t h = uint32_t(tid + i * threads);
      if (h >= H) continue;
      float m = c[swz(h)];
      uint32_t arg = 0;
#pragma unroll
      for (int j = 1; j < K; ++j) {
        const float x = c[swz(h + j * H)];
        if (x < m) m = x, arg = j;  // strict: ties keep the lowest j
      }
      if constexpr (kBack) back_row[h] = uint8_t(arg);
#pragma unroll
      for (int b = 0; b < K; ++b) {
        const uint32_t s = h * K + b;
        const float d = __fsub_rn(y(i, b, s), vt);
        n[swz(s)] = __fadd_rn(m, __fmul_rn(d, d));
      }
    }
  }
};

template <int K, int HPT, bool kShared>
__global__ void __launch_bounds__(kShared ? kSharedThreadsMax : kGlobalThreadsMax, kShared ? kSharedMinBlocks : 1)
    viterbi_encode_kernel(const EncodeArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int L = a.L, T = a.T, k = a.k, half = T / 2;
  const uint32_t S = 1u << L, H = S / K;
  const int threads = blockDim.x, tid = threadIdx.x;
  double* red_d = reinterpret_cast<double*>(smem);       // 32
  float* red_f = reinterpret_cast<float*>(red_d + 32);   // 32
  uint32_t* red_i = reinterpret_cast<uint32_t*>(red_f + 32);  // 32
  float* tgt = reinterpret_cast<float*>(red_i + 32);      // T
  uint32_t* path = reinterpret_cast<uint32_t*>(tgt + T);  // T
  float* buf = kShared ? reinterpret_cast<float*>(path + T) : a.costs + size_t(blockIdx.x) * 2 * S;
  float* bound = a.bounds + size_t(blockIdx.x) * H;
  uint8_t* back = a.back + size_t(blockIdx.x) * size_t(T) * H;
  const int wpb = T * k / 32;

  Heads<K, HPT, kShared> heads{H, L, threads, tid};

  for (int64_t blk = blockIdx.x; blk < a.blocks; blk += gridDim.x) {
    for (int t = tid; t < T; t += threads) {
      tgt[t] = a.v[blk * T + t];
      path[t] = 0;
    }
    __syncthreads();
    float* cur = buf;
    float* nxt = buf + S;
    auto swap = [&] {
      float* x = cur;
      cur = nxt;
      nxt = x;
    };

    // 1. Overlap bounds. Forward over tgt[half … T−1] to the wrap: F.
    heads.use_table(false);
    heads.init(cur, tgt[half], ~0u);
    __syncthreads();
    for (int t = half + 1; t < T; ++t) {
      heads.template step<false>(cur, nxt, tgt[t], nullptr);
      __syncthreads();
      swap();
    }
    for (uint32_t o = tid; o < H; o += threads) {
      float m = cur[swz(o)];
      for (uint32_t j = 1; j < K; ++j) {
        const float x = cur[swz(o + j * H)];
        m = x < m ? x : m;
      }
      bound[o] = m;
    }
    __syncthreads();
    // Backward over tgt[half−1 … 0] on bit-reversed states: G.
    heads.use_table(true);
    heads.init(cur, tgt[half - 1], ~0u);
    __syncthreads();
    for (int i = 1; i < half; ++i) {
      heads.template step<false>(cur, nxt, tgt[half - 1 - i], nullptr);
      __syncthreads();
      swap();
    }
    float lower_part = CUDART_INF_F;
    for (uint32_t o = tid; o < H; o += threads) {
      const uint32_t base = o * K;
      float m = cur[swz(__brev(base) >> (32 - L))];
      for (uint32_t b = 1; b < K; ++b) {
        const float x = cur[swz(__brev(base + b) >> (32 - L))];
        m = x < m ? x : m;
      }
      const float c = __fadd_rn(bound[o], m);
      bound[o] = c;
      lower_part = c < lower_part ? c : lower_part;
    }
    const float lower = block_min(lower_part, red_f);

    // 2. Constrained passes in increasing bound order.
    heads.use_table(false);
    float best = CUDART_INF_F;
    uint32_t tried = 0;
    bool certified = false;
    for (;;) {
      if (tried == H) {
        certified = true;
        break;
      }
      float next = CUDART_INF_F;
      uint32_t o = ~0u;
      for (uint32_t x = tid; x < H; x += threads)
        if (before(bound[x], x, next, o)) next = bound[x], o = x;
      block_argmin(next, o, red_f, red_i);
      if (tried == uint32_t(a.max_overlaps) || !(next < best)) {
        certified = next >= best;
        break;
      }
      heads.init(cur, tgt[0], o);
      __syncthreads();
      if (tid == 0) bound[o] = CUDART_INF_F;  // taken
      for (int t = 1; t < T; ++t) {
        heads.template step<true>(cur, nxt, tgt[t], back + size_t(t) * H);
        __syncthreads();
        swap();
      }
      // 3. The pass's best end state (low bits o); backtrack if it wins.
      if (tid == 0) {
        uint32_t s = o;
        for (uint32_t j = 1; j < K; ++j)
          if (cur[swz(o + j * H)] < cur[swz(s)]) s = o + j * H;
        const float cost = cur[swz(s)];
        red_f[0] = cost;
        if (cost < best) {
          path[T - 1] = s;
          for (int t = T - 1; t > 0; --t) {
            const uint32_t h = s >> k;
            s = h + uint32_t(back[size_t(t) * H + h]) * H;
            path[t - 1] = s;
          }
        }
      }
      __syncthreads();
      const float cost = red_f[0];
      __syncthreads();
      if (cost < best) best = cost;
      ++tried;
    }

    // 4. States, words, error.
    double err = 0.0;
    for (int t = tid; t < T; t += threads) {
      const uint32_t s = path[t];
      a.states[blk * T + t] = s;
      const double d = double(code_value(s)) - double(tgt[t]);
      err += d * d;
    }
    for (int w = tid; w < wpb; w += threads) {
      uint32_t word = 0;
      for (int i = 0; i < 32; ++i) {
        const int p = 32 * w + i;
        const int t = T - 1 - p / k;
        word |= ((path[t] >> (p - (p / k) * k)) & 1u) << i;
      }
      a.words[blk * wpb + w] = word;
    }
    const double error = block_sum(err, red_d);
    if (tid == 0 && a.results) a.results[blk] = BlockResult{error, lower, certified ? 1u : 0u};
  }
}

using KernelFn = void (*)(EncodeArgs);

KernelFn kernel_for(int k, bool shared) {
  switch (k) {
    case 2: return shared ? viterbi_encode_kernel<4, 4, true> : viterbi_encode_kernel<4, 16, false>;
    case 3: return shared ? viterbi_encode_kernel<8, 2, true> : viterbi_encode_kernel<8, 8, false>;
    default: return shared ? viterbi_encode_kernel<16, 1, true> : viterbi_encode_kernel<16, 4, false>;
  }
}

}  // namespace

EncodeShape encode_shape(int k, int L, int T) {
  int dev = 0, optin = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
  const std::size_t fixed = 32 * 8 + 32 * 4 + 32 * 4 + std::size_t(T) * 8;  // reductions, targets, path
  const std::size_t with_costs = fixed + (std::size_t(8) << L);
  EncodeShape s{};
  s.shared_costs = L <= kSharedMaxL && with_costs <= std::size_t(optin);
  s.smem = s.shared_costs ? with_costs : fixed;
  if (s.smem > std::size_t(optin))
    throw Error("cuda viterbi: T = " + std::to_string(T) + " needs " + std::to_string(s.smem) +
                " bytes of shared memory per block; the device has " + std::to_string(optin));
  s.threads = std::max(32, (1 << L) / (s.shared_costs ? 16 : 64));
  const KernelFn fn = kernel_for(k, s.shared_costs);
  check_cuda(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(s.smem)),
             "cudaFuncSetAttribute(viterbi_encode_kernel)");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, fn, s.threads, s.smem),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(viterbi_encode_kernel)");
  if (s.blocks_per_sm < 1)
    throw Error("cuda viterbi: the kernel for k = " + std::to_string(k) + ", L = " + std::to_string(L) +
                " cannot be resident on this device");
  return s;
}

void launch_encode(const EncodeArgs& args, const EncodeShape& shape, int grid, cudaStream_t stream) {
  if (args.blocks == 0) return;
  kernel_for(args.k, shape.shared_costs)<<<grid, shape.threads, shape.smem, stream>>>(args);
  check_cuda(cudaGetLastError(), "viterbi_encode_kernel launch");
}

}  // namespace trellis::cuda::detail
