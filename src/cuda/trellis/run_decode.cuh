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
#include <type_traits>

#include "launch_constants.cuh"
#include "trellis/code.hpp"

namespace trellis::cuda::detail {

inline constexpr float kHalfBias = 1534.0f;  // (y + 1534) is what the MMA sees

// Any T: the first word of the run at t0 (its k+1 words wrap past the block end only at t0 = 0).
__device__ __forceinline__ int run_first_word(int T, int k, int t0) { return (T - 32 - t0) * k / 32; }

// The k+1 words of the run whose first word is at `at` (= row + first word)
// in a block of wpb = T·k/32 words (T a multiple of 32; the tensor-core forms'
// T = 256 by default): words 0..k−1 never wrap (first <= wpb − k) and load as
// one vector for k = 2 and 4 (first and wpb are multiples of 2 and 4 words,
// so with the row's start the address is 8- or 16-byte aligned); word k is
// word (first + k) mod wpb: the next one, or for the run at t0 = 0
// (first = wpb − k, the only one that wraps) the block's word 0, wpb − k
// words before `at`.
template <int K>
__device__ __forceinline__ void load_block_run(const uint32_t* __restrict__ at, bool wraps, uint32_t (&w)[K + 1],
                                               int wpb = kBlockT * K / 32) {
  if constexpr (K == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(at));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (K == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(at));
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < K; ++i) w[i] = __ldg(at + i);
  }
  if (wraps) w[K] = __ldg(at + K - wpb);
  else w[K] = __ldg(at + K);
}

// Asks L2 to fetch the line holding p (a later slab's code words), without a register or a wait.
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Window of position j (0..31) of a loaded run before the mask: bits
// (31-j)·k.. of the words, as many as they hold above it.
template <int K>
__device__ __forceinline__ uint32_t run_window(const uint32_t (&w)[K + 1], int j) {
  const int bit = (31 - j) * K;
  const int wi = bit >> 5, off = bit & 31;
  if (off == 0) return w[wi];
  if (wi < K) return __funnelshift_r(w[wi], w[wi + 1], off);
  return w[wi] >> off;
}

// Cutting a state out of its window. The mask is one LOP3 on the integer ALU
// pipe, which the funnel shifts already keep busy. When L = D·k the window of
// position j − D starts exactly L bits above position j's, so with U the
// unmasked windows
//   s_j = U_j − 2^L·U_{j−D}   (mod 2^32; U_j holds s_j + 2^L·(U_{j−D} mod 2^(32−L)))
// is one IMAD, which issues to the FMA pipe, from a window position j − D
// needs anyway. A kernel built for one L (D = L/k) cuts the positions where
// cut_by_step says so this way and the rest by the mask, so the ALU and FMA
// pipes share the work. The multiplier −2^L is a kernel argument: as a
// constant, ptxas would turn the multiply back into a shift on the ALU pipe.
struct StateCut {
  uint32_t mask;      // 2^L − 1
  uint32_t neg_step;  // −2^L (mod 2^32)
};
inline StateCut state_cut(int L) { return {(1u << L) - 1u, 0u - (1u << L)}; }
inline constexpr int kStepCutL = 12;  // the L the byte-operand kernels have a step-cutting instance for

// D = L/k of a kernel instance built for L = kL at k (kL = 0, any L: 0, every state by the mask).
__host__ __device__ constexpr int step_positions(int kL, int k) { return kL > 0 && kL % k == 0 ? kL / k : 0; }

// pick(std::integral_constant<int, kL>{}) for the instance that serves a geometry's L:
// kStepCutL when L is that, else 0 (any L). pick returns the instance's launcher.
template <class Pick>
auto for_state_cut(int L, Pick pick) {
  return L == kStepCutL ? pick(std::integral_constant<int, kStepCutL>{}) : pick(std::integral_constant<int, 0>{});
}

// Positions cut by the step when the kernel knows D (0: every position by the mask).
__device__ __forceinline__ constexpr bool cut_by_step(int j, int D) { return D > 0 && j >= D && (j & 3) == 0; }

// State of position j of a run whose windows window(i) gives, D = L/k or 0.
template <int D, class Window>
__device__ __forceinline__ uint32_t cut_state(const Window& window, int j, StateCut cut) {
  if (cut_by_step(j, D)) return window(j - D) * cut.neg_step + window(j);
  return window(j) & cut.mask;
}

// State of position j (0..31) of a loaded run.
template <int K>
__device__ __forceinline__ uint32_t run_state(const uint32_t (&w)[K + 1], int j, uint32_t mask) {
  return run_window<K>(w, j) & mask;
}

// The 1MAD hash of position j of a run: its four bytes sum to y + 510.
template <int K, int D = 0>
__device__ __forceinline__ uint32_t run_hash(const uint32_t (&w)[K + 1], int j, StateCut cut) {
  return code_hash(cut_state<D>([&](int i) { return run_window<K>(w, i); }, j, cut));
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
