// Run decode on the GPU (SPEC §2, "fast decode of a run").
//
// A lane that owns the 32 consecutive positions t0..t0+31 of a block loads
// the k+1 words starting at word (T-32-t0)·k/32 (mod wpb); position t0+j is
// then the L-bit window at bit (31-j)·k of those words. With j a compile-time
// constant every shift is a constant: one funnel shift and one mask per
// weight, then the 1MAD hash (one IMAD) and its byte sum (one IDP4A).
//
// The byte sum is produced directly as the binary16 bit pattern of
// y + 1534 = 1024 + bytesum: IDP4A accumulates onto 0x6400 (1024.0), and
// every integer in [1024, 2048) is exact in fp16. Two such values pack into
// one half2 register with one IMAD (pack_halves). The bias 1534·Σx is removed once per
// output, so nothing else is spent per weight.
#pragma once
#include <cstdint>

#include "trellis/code.hpp"

namespace trellis::cuda::detail {

inline constexpr float kHalfBias = 1534.0f;  // (y + 1534) is what the MMA sees

// Any T: the run's first word and the k+1 words, wrapping past the block end.
__device__ __forceinline__ int run_first_word(int T, int k, int t0) { return (T - 32 - t0) * k / 32; }

template <int K>
__device__ __forceinline__ void load_run(const uint32_t* __restrict__ block, int wpb, int w0,
                                         uint32_t (&w)[K + 1]) {
#pragma unroll
  for (int i = 0; i <= K; ++i) {
    int wi = w0 + i;
    if (wi >= wpb) wi -= wpb;
    w[i] = __ldg(block + wi);
  }
}

// The tensor-core forms decode T = 256 blocks (the format's practical block).
inline constexpr int kBlockT = 256;

// Bring `bytes` (a multiple of 16, 16-byte aligned) at p into L2 without
// holding registers: one bulk prefetch on sm_90, the first 128-byte line
// elsewhere.
__device__ __forceinline__ void prefetch_l2_bytes(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)bytes;
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// Lane q's two runs of a T = 256 block (positions 32q.. and 128 + 32q..),
// addressed from p = block + (7 − q)·K, the first word of its half-0 run
// ((T − 32 − t0)·K/32 at t0 = 32q): half H's run starts 4HK words earlier,
// so every offset from p is a constant. Word K of a run follows it, except
// that lane q = 0's half-0 run ends the block and wraps to its first word
// (p − 7K). The run's first word is 16-byte aligned for k = 4 and 8-byte
// aligned for k = 2, so those load as vectors.
template <int K, int H>
__device__ __forceinline__ void load_lane_run(const uint32_t* __restrict__ p, bool q0, uint32_t (&w)[K + 1]) {
  const uint32_t* first = p - 4 * H * K;
  if constexpr (K == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(first));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (K == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(first));
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < K; ++i) w[i] = __ldg(first + i);
  }
  if constexpr (H == 0) {
    if (q0) w[K] = __ldg(p - 7 * K);
    else w[K] = __ldg(p + K);
  } else {
    w[K] = __ldg(first + K);
  }
}

// State of position j (0..31) of a loaded run.
template <int K>
__device__ __forceinline__ uint32_t run_state(const uint32_t (&w)[K + 1], int j, uint32_t mask) {
  const int bit = (31 - j) * K;
  const int wi = bit >> 5, off = bit & 31;
  uint32_t win;
  if (off == 0) {
    win = w[wi];
  } else if (wi < K) {
    win = __funnelshift_r(w[wi], w[wi + 1], off);
  } else {
    win = w[wi] >> off;
  }
  return win & mask;
}

// The multipliers of the FMA-pipe window extraction for the launch's L
// (k < L ≤ 16): p16 = 2^(16−L), q = 2^L. The host computes them and passes
// them as kernel arguments, so the compiler cannot see that they are powers
// of two and turn the multiplies back into shifts.
struct WindowScale {
  uint32_t p16, q;
};
inline WindowScale window_scale(int L) { return {1u << (16 - L), 1u << L}; }

// The L-bit window at bit `bit` (a constant) of words w, on the FMA pipe,
// for a window that starts at bit off ≤ 16 of its word (so it never crosses
// into the next one, L ≤ 16): w·2^(16−off) moves it to bit 16, ·2^(16−L) to
// the top (dropping the bits above it), and hi32(·2^L) down to bit 0. Three
// IMADs instead of the shift and mask on the integer ALU pipe.
template <int N>
__device__ __forceinline__ uint32_t window_state_fma(const uint32_t (&w)[N], int bit, WindowScale ws) {
  const int wi = bit >> 5, off = bit & 31;
  return __umulhi((w[wi] << (16 - off)) * ws.p16, ws.q);
}

// Which positions j of an n-position run (window of j at bit (n−1−j)·K of
// its words) a kernel extracts on the FMA pipe: `count` of those whose
// window starts at bit 1..16 of a word, spread evenly over them. Per weight
// the ALU way costs a shift and a mask (2 ALU) and the hash (1 FMA), the FMA
// way 4 FMA (the first multiply shared by the positions of one word); the
// kernels move about a fifth of their weights, which by the loop's
// instruction mix leaves the two pipes about equally loaded.
template <int K, int N, int kCount>
__host__ __device__ constexpr uint32_t fma_state_positions() {
  int eligible = 0;
  for (int j = 0; j < N; ++j) {
    const int off = ((N - 1 - j) * K) & 31;
    if (off != 0 && off <= 16) ++eligible;
  }
  const int take = eligible < kCount ? eligible : kCount;
  uint32_t chosen = 0;
  for (int j = 0, i = 0; j < N; ++j) {
    const int off = ((N - 1 - j) * K) & 31;
    if (off == 0 || off > 16) continue;
    if ((i + 1) * take / eligible > i * take / eligible) chosen |= 1u << j;
    ++i;
  }
  return chosen;
}

// The 1MAD hash of position j of a lane's 32-position run in row R (0, 1) of
// the axis-1 tile's row pair: row 1 takes 13 of its 32 states (13 of the
// pair's 64 weights) on the FMA pipe.
template <int K, int R>
__device__ __forceinline__ uint32_t lane_hash(const uint32_t (&w)[K + 1], int j, uint32_t mask, WindowScale ws) {
  if constexpr (R == 1) {
    if ((fma_state_positions<K, 32, 13>() >> j) & 1u) return code_hash(window_state_fma(w, (31 - j) * K, ws));
  }
  return code_hash(run_state<K>(w, j, mask));
}

// binary16 bits of y(state) + 1534, in the low half of the result.
__device__ __forceinline__ uint32_t biased_code_half(uint32_t state) {
  return __dp4a(code_hash(state), 0x01010101u, 0x6400u);
}

// Two binary16 values (low halves of lo and hi, upper halves zero) as one
// half2: lo + hi·2^16, written as an integer multiply-add so it can issue to
// the FMA pipe (IMAD) — the integer ALU pipe is the one the window extraction
// (funnel shift, mask) already saturates; a PRMT would do the same on the ALU.
__device__ __forceinline__ uint32_t pack_halves(uint32_t lo, uint32_t hi) {
  uint32_t r;
  asm("mad.lo.u32 %0, %1, 65536, %2;" : "=r"(r) : "r"(hi), "r"(lo));
  return r;
}

// Two biased code values (positions j, j+1 of a run) as one half2 register.
template <int K>
__device__ __forceinline__ uint32_t biased_pair(const uint32_t (&w)[K + 1], int j, uint32_t mask) {
  return pack_halves(biased_code_half(run_state<K>(w, j, mask)), biased_code_half(run_state<K>(w, j + 1, mask)));
}

}  // namespace trellis::cuda::detail
