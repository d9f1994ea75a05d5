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
// one half2 register with one PRMT. The bias 1534·Σx is removed once per
// output, so nothing else is spent per weight.
#pragma once
#include <cstdint>

#include "trellis/code.hpp"

namespace trellis::cuda::detail {

inline constexpr float kHalfBias = 1534.0f;  // (y + 1534) is what the MMA sees

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

// binary16 bits of y(state) + 1534, in the low half of the result.
__device__ __forceinline__ uint32_t biased_code_half(uint32_t state) {
  return __dp4a(state * kCodeMul + kCodeAdd, 0x01010101u, 0x6400u);
}

// Two biased code values (positions j, j+1 of a run) as one half2 register.
template <int K>
__device__ __forceinline__ uint32_t biased_pair(const uint32_t (&w)[K + 1], int j, uint32_t mask) {
  return __byte_perm(biased_code_half(run_state<K>(w, j, mask)), biased_code_half(run_state<K>(w, j + 1, mask)),
                     0x5410);
}

}  // namespace trellis::cuda::detail
