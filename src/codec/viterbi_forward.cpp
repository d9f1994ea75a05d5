// Vectorized add-compare-select over T steps (math in viterbi_forward.hpp).
//
// Registers hold W consecutive heads h … h+W−1: the min/argmin runs over the
// 2^k predecessor vectors c[h + j·H]; the W·2^k successor costs are then
// 2^k vectors of W, each lane l of chunk O taking head (W·O + l) / 2^k (a
// constant shuffle) plus its squared error. Written with GCC/Clang vector
// extensions; W is the register width of the instruction set: on x86-64 an
// AVX-512 (W = 16), an AVX2 (W = 8) and a baseline (W = 4) build, picked at
// run time; trellises with fewer heads than that use W = 4, or 2 when H = 2.
// All variants do the same IEEE operations in the same order (the file is
// built with -ffp-contract=off), so codes do not depend on the CPU.
#include "viterbi_forward.hpp"

#include <cstddef>
#include <utility>

namespace trellis::detail {
namespace {

template <int W>
struct Lanes {
  typedef float f32 __attribute__((vector_size(4 * W)));
  typedef int32_t i32 __attribute__((vector_size(4 * W)));
  typedef uint8_t u8 __attribute__((vector_size(W)));
};

#define TRELLIS_INLINE __attribute__((always_inline)) inline

// Chunk O of the W·K successors: lane l = head (W·O + l) / K of `best`.
template <int K, int W, int O, std::size_t... l>
TRELLIS_INLINE typename Lanes<W>::f32 spread(typename Lanes<W>::f32 best, std::index_sequence<l...>) {
  return __builtin_shufflevector(best, best, int((W * O + int(l)) / K)...);
}

template <int K, int W, int O>
TRELLIS_INLINE void successor_chunk(typename Lanes<W>::f32 best, const float* y, float vt, float* n) {
  using F = typename Lanes<W>::f32;
  const F m = spread<K, W, O>(best, std::make_index_sequence<W>{});
  F yy;
  __builtin_memcpy(&yy, y + W * O, sizeof(F));
  const F d = yy - vt;
  const F r = m + d * d;
  __builtin_memcpy(n + W * O, &r, sizeof(F));
}

// n[i·K + b] = best[i] + (y[i·K + b] − vt)² for the W heads i.
template <int K, int W, std::size_t... O>
TRELLIS_INLINE void successors(typename Lanes<W>::f32 best, const float* y, float vt, float* n,
                               std::index_sequence<O...>) {
  (successor_chunk<K, W, int(O)>(best, y, vt, n), ...);
}

template <int K, int W>
TRELLIS_INLINE float* forward(const float* __restrict y, const float* __restrict v, int T, int L, float* cost,
                              float* spare, uint8_t* __restrict back) {
  using F = typename Lanes<W>::f32;
  using I = typename Lanes<W>::i32;
  using B = typename Lanes<W>::u8;
  const int H = (1 << L) / K;
  float* cur = cost;
  float* nxt = spare;
  for (int t = 1; t < T; ++t) {
    const float* __restrict c = cur;
    float* __restrict n = nxt;
    uint8_t* __restrict bt = back + std::size_t(t) * std::size_t(H);
    const float vt = v[t];
    for (int h = 0; h < H; h += W) {
      F best;
      __builtin_memcpy(&best, c + h, sizeof(F));
      I arg = {};
      for (int j = 1; j < K; ++j) {
        F x;
        __builtin_memcpy(&x, c + j * H + h, sizeof(F));
        const I lt = x < best;  // strict: ties keep the lowest j
        best = lt ? x : best;
        arg = lt ? I{} + j : arg;
      }
      const B a8 = __builtin_convertvector(arg, B);
      __builtin_memcpy(bt + h, &a8, sizeof(B));
      successors<K, W>(best, y + h * K, vt, n + h * K, std::make_index_sequence<K>{});
    }
    float* tmp = cur;
    cur = nxt;
    nxt = tmp;
  }
  return cur;
}

template <int W>
TRELLIS_INLINE float* forward_k(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                                uint8_t* back) {
  switch (k) {
    case 1: return forward<2, W>(y, v, T, L, cost, spare, back);
    case 2: return forward<4, W>(y, v, T, L, cost, spare, back);
    case 3: return forward<8, W>(y, v, T, L, cost, spare, back);
    case 4: return forward<16, W>(y, v, T, L, cost, spare, back);
    case 5: return forward<32, W>(y, v, T, L, cost, spare, back);
    case 6: return forward<64, W>(y, v, T, L, cost, spare, back);
    case 7: return forward<128, W>(y, v, T, L, cost, spare, back);
    default: return forward<256, W>(y, v, T, L, cost, spare, back);
  }
}

using ForwardFn = float* (*)(const float*, const float*, int, int, int, float*, float*, uint8_t*);

float* forward_base(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                    uint8_t* back) {
  return forward_k<4>(y, v, T, k, L, cost, spare, back);
}

float* forward_tiny(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                    uint8_t* back) {
  return forward_k<2>(y, v, T, k, L, cost, spare, back);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma,bmi,bmi2,f16c,lzcnt,movbe"))) float* forward_avx2(
    const float* y, const float* v, int T, int k, int L, float* cost, float* spare, uint8_t* back) {
  return forward_k<8>(y, v, T, k, L, cost, spare, back);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,bmi,bmi2,f16c,lzcnt,movbe"))) float*
forward_avx512(const float* y, const float* v, int T, int k, int L, float* cost, float* spare, uint8_t* back) {
  return forward_k<16>(y, v, T, k, L, cost, spare, back);
}

struct Widest {
  ForwardFn fn;
  int width;
};

Widest widest() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return {forward_avx512, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    return {forward_avx2, 8};
  return {forward_base, 4};
}
#else
struct Widest {
  ForwardFn fn;
  int width;
};

Widest widest() { return {forward_base, 4}; }
#endif

}  // namespace

float* viterbi_forward(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                       uint8_t* back) {
  static const Widest best = widest();
  const int H = (1 << L) >> k;
  const ForwardFn fn = H >= best.width ? best.fn : H >= 4 ? forward_base : forward_tiny;
  return fn(y, v, T, k, L, cost, spare, back);
}

}  // namespace trellis::detail
