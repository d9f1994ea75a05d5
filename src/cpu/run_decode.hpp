// Decoding trellis runs N at a time, one lane per run (SPEC §2, "fast decode
// of a run"), for the CPU linear kernels.
//
// A run is 32 consecutive positions t0 … t0+31 (t0 a multiple of 32) of one
// block of wpb = T·k/32 words. Its state bits are the k+1 words starting at
// word (T−32−t0)·k/32 of the block; the last run's (k+1)-th word is the
// block's word 0 (the stream is circular). Position t0+u is the L-bit window
// at bit (31−u)·k of those words. With the words of N runs stored lane by
// lane (RunWords: words[w·N + lane]), position u of all N runs is one funnel
// shift by a shift common to every lane, q = (31−u)·k / 32, s = (31−u)·k mod 32:
//   state = ((words[q] >> s) | ((words[q+1] << 1) << (31−s))) & (2^L − 1),
// then the 1MAD code value per lane,
//   h = state·34038481 + 76625530 (mod 2^32),
//   y = bytesum(h) − 510   (two masked pair sums),
// and the weight in the mode's per-weight form (trellis/numerics.hpp):
//   rounded: round_bf16(float(y)·f),  f32: float(y)·f,  factored: float(y),
// f being the lane's row factor. Every step is exact integer arithmetic or one
// correctly rounded fp32 operation per lane, so the result is the scalar
// definition bit for bit whatever the vector width the compiler picks.
//
// The kernels that use this are compiled for several instruction sets
// (TRELLIS_CPU_CLONES: AVX-512, AVX2 and the baseline, chosen at load time by
// the CPU); the helpers here, and every lambda they are handed, must be
// inlined into them.
#pragma once
#include <cstdint>

#include "trellis/code.hpp"
#include "trellis/half.hpp"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

// Sanitizer builds keep only the baseline copy: instrumenting every clone of
// the unrolled decode costs minutes of compile time per file, and the clones
// share one source (the release tests run the machine's clone).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TRELLIS_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TRELLIS_CPU_CLONES
#endif
#define TRELLIS_CPU_INLINE inline __attribute__((always_inline))
#define TRELLIS_CPU_INLINE_LAMBDA __attribute__((always_inline))

namespace trellis::cpu {

inline constexpr int kRunLength = 32;
inline constexpr int kMaxRunWords = 9;  // k + 1 for k ≤ 8

inline float stored_row_factor(const TrellisTensorView& w, int64_t r) {
  return row_factor(fp16_to_float(w.scales[r]));
}

template <int N>
struct Lanes {
  typedef uint32_t u32 __attribute__((vector_size(N * 4)));
  typedef int32_t i32 __attribute__((vector_size(N * 4)));
  typedef float f32 __attribute__((vector_size(N * 4)));
};

// Unaligned lane-vector loads and stores through the vector type (whose
// accesses alias only its element type, so float stores do not force code
// words to be reloaded).
template <typename V, typename E>
TRELLIS_CPU_INLINE V load_lanes(const E* p) {
  typedef V Unaligned __attribute__((aligned(alignof(E))));
  return *reinterpret_cast<const Unaligned*>(p);
}

template <typename V, typename E>
TRELLIS_CPU_INLINE void store_lanes(E* p, V v) {
  typedef V Unaligned __attribute__((aligned(alignof(E))));
  *reinterpret_cast<Unaligned*>(p) = v;
}

// words[w·N + lane] = word w (0 … k) of run j of the block at `block`.
template <int N>
TRELLIS_CPU_INLINE void gather_run(const uint32_t* block, const TrellisGeometry& g, int j, int lane,
                                   uint32_t* words) {
  const int wpb = g.words_per_block();
  const int first = (g.T / kRunLength - 1 - j) * g.k;
  for (int w = 0; w <= g.k; ++w) {
    const int i = first + w;
    words[w * N + lane] = block[i == wpb ? 0 : i];
  }
}

// words[w·N + lane] = word w of the block at `block`, for w = 0 … wpb, word
// wpb being word 0 again: run j's words (gather_run) then start at
// words + (T/32 − 1 − j)·k·N.
template <int N>
TRELLIS_CPU_INLINE void gather_block(const uint32_t* block, int wpb, int lane, uint32_t* words) {
  for (int w = 0; w < wpb; ++w) words[w * N + lane] = block[w];
  words[wpb * N + lane] = block[0];
}

// sink(u, w) for u = 0 … 31, w the lane vector of weight u of every lane's
// run, in mode Mode's form, for the N runs in `words`; f[lane] is the lane's
// row factor. K is k when it is a compile-time constant (the shifts fold), 0
// to read it from `k`.
template <int N, int K, Numerics Mode, typename Sink>
TRELLIS_CPU_INLINE void decode_runs(const uint32_t* words, int k, int L, typename Lanes<N>::f32 f, Sink& sink) {
  using U = typename Lanes<N>::u32;
  using I = typename Lanes<N>::i32;
  using F = typename Lanes<N>::f32;
  const int kk = K ? K : k;
  const uint32_t mask = (1u << L) - 1u;
#pragma GCC unroll 32
  for (int u = 0; u < kRunLength; ++u) {
    const int bit = (kRunLength - 1 - u) * kk;
    const int q = bit >> 5, s = bit & 31;
    const U lo = load_lanes<U>(words + q * N), hi = load_lanes<U>(words + (q + 1) * N);
    const U state = ((lo >> s) | ((hi << 1) << (31 - s))) & mask;
    const U h = state * kCodeMul + kCodeAdd;
    const U pairs = (h & 0x00ff00ffu) + ((h >> 8) & 0x00ff00ffu);
    const I y = I((pairs & 0xffffu) + (pairs >> 16)) - kCodeBias;
    const F v = __builtin_convertvector(y, F);
    if constexpr (Mode == Numerics::factored) {
      sink(u, v);
    } else if constexpr (Mode == Numerics::f32) {
      sink(u, v * f);
    } else {
      const F w = v * f;
      const U b = U(w);
      const U nan = U((b & 0x7fffffffu) > 0x7f800000u);
      const U rne = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
      sink(u, F((nan & ((b | 0x00400000u) & 0xffff0000u)) | (~nan & rne)));
    }
  }
}

// decode_runs for a run-time k and mode. The model's mode (f32) gets the
// shifts folded for the usual k; the other modes, which serve tests and
// references, keep k at run time (fewer copies of the unrolled loop to build).
// Sinks are lambdas marked TRELLIS_CPU_INLINE_LAMBDA: a lambda left out of
// line would be compiled for the baseline instruction set, not the clone's.
template <int N, typename Sink>
TRELLIS_CPU_INLINE void decode_runs(const uint32_t* words, int k, int L, Numerics mode, typename Lanes<N>::f32 f,
                                    Sink&& sink) {
  switch (mode) {
    case Numerics::rounded: return decode_runs<N, 0, Numerics::rounded>(words, k, L, f, sink);
    case Numerics::factored: return decode_runs<N, 0, Numerics::factored>(words, k, L, f, sink);
    case Numerics::f32:
      switch (k) {
        case 2: return decode_runs<N, 2, Numerics::f32>(words, k, L, f, sink);
        case 3: return decode_runs<N, 3, Numerics::f32>(words, k, L, f, sink);
        case 4: return decode_runs<N, 4, Numerics::f32>(words, k, L, f, sink);
        default: return decode_runs<N, 0, Numerics::f32>(words, k, L, f, sink);
      }
  }
}

}  // namespace trellis::cpu
