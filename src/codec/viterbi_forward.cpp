// Vectorized add-compare-select over T steps (math in viterbi_forward.hpp).
// The step is written as plain loops with the branching factor 2^k a template
// constant; on x86-64 GCC/Clang build AVX-512, AVX2 and baseline clones and
// pick one at load time, elsewhere the compiler's default target is used.
#include "viterbi_forward.hpp"

#include <cstddef>

namespace trellis::detail {
namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRELLIS_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TRELLIS_ISA_CLONES
#endif

template <int K>
__attribute__((always_inline)) inline float* forward(const float* __restrict y, const float* __restrict v,
                                                     int T, int L, float* cost, float* spare,
                                                     float* __restrict heads, uint8_t* __restrict back) {
  const int H = (1 << L) / K;
  float* cur = cost;
  float* nxt = spare;
  for (int t = 1; t < T; ++t) {
    const float* __restrict c = cur;
    uint8_t* __restrict bt = back + std::size_t(t) * std::size_t(H);
    // min/argmin over the 2^k predecessor arrays, one array at a time so
    // every loop is a contiguous sweep over the heads.
    for (int h = 0; h < H; ++h) {
      heads[h] = c[h];
      bt[h] = 0;
    }
    for (int j = 1; j < K; ++j) {
      const float* __restrict cj = c + j * H;
      for (int h = 0; h < H; ++h) {
        const bool lt = cj[h] < heads[h];
        bt[h] = lt ? uint8_t(j) : bt[h];
        heads[h] = lt ? cj[h] : heads[h];
      }
    }
    const float vt = v[t];
    float* __restrict n = nxt;
    for (int h = 0; h < H; ++h) {
      const float mh = heads[h];
      for (int b = 0; b < K; ++b) {
        const float d = y[h * K + b] - vt;
        n[h * K + b] = mh + d * d;
      }
    }
    float* tmp = cur;
    cur = nxt;
    nxt = tmp;
  }
  return cur;
}

#define TRELLIS_FORWARD_K(K)                                                                       \
  TRELLIS_ISA_CLONES float* forward_##K(const float* y, const float* v, int T, int L, float* cost, \
                                        float* spare, float* heads, uint8_t* back) {               \
    return forward<K>(y, v, T, L, cost, spare, heads, back);                                       \
  }
TRELLIS_FORWARD_K(2)
TRELLIS_FORWARD_K(4)
TRELLIS_FORWARD_K(8)
TRELLIS_FORWARD_K(16)
TRELLIS_FORWARD_K(32)
TRELLIS_FORWARD_K(64)
TRELLIS_FORWARD_K(128)
TRELLIS_FORWARD_K(256)
#undef TRELLIS_FORWARD_K

}  // namespace

float* viterbi_forward(const float* y, const float* v, int T, int k, int L, float* cost, float* spare,
                       float* heads, uint8_t* back) {
  switch (k) {
    case 1: return forward_2(y, v, T, L, cost, spare, heads, back);
    case 2: return forward_4(y, v, T, L, cost, spare, heads, back);
    case 3: return forward_8(y, v, T, L, cost, spare, heads, back);
    case 4: return forward_16(y, v, T, L, cost, spare, heads, back);
    case 5: return forward_32(y, v, T, L, cost, spare, heads, back);
    case 6: return forward_64(y, v, T, L, cost, spare, heads, back);
    case 7: return forward_128(y, v, T, L, cost, spare, heads, back);
    default: return forward_256(y, v, T, L, cost, spare, heads, back);
  }
}

}  // namespace trellis::detail
