// Dense matmul (contract in dense_matmul.hpp). A dot product's 16 lane
// partials are two 8-float vectors (GCC/Clang vector extensions: SSE2 pairs
// by default, AVX registers in the x86-64-v3/v4 clones). Built with
// -ffp-contract=off, so no product is fused and every clone gives the same
// bits.
//
// fp32 weights: lane l of (lo, hi) sums the products i ≡ l (mod 16).
// bf16 weights: 16 weights are loaded as 8 words; word j holds weight 2j in
// its low half and 2j+1 in its high half, so `word << 16` and
// `word & 0xffff0000` are the even and odd weights as fp32 with no shuffle.
// The activations are split the same way once per call (per 16 inputs: the
// 8 even ones, then the 8 odd ones), so lo sums i ≡ 2j and hi sums
// i ≡ 2j+1 (mod 16). Inputs past the last multiple of 16 go to lanes
// 0, 1, … of a scalar tail.
#include "dense_matmul.hpp"

#include <cstring>
#include <vector>

#include "trellis/half.hpp"

// Function clones for newer x86-64 levels, picked at load time.
#if defined(__x86_64__) && defined(__GNUC__)
#define TRELLIS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TRELLIS_CLONES
#endif
#define TRELLIS_INLINE [[gnu::always_inline]] inline

namespace trellis::model::cpu {
namespace {

typedef float f32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));

constexpr int kLanes = 16;
constexpr int64_t kRows = 4;  // output rows per block

TRELLIS_INLINE f32x8 load8(const float* p) {
  f32x8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
TRELLIS_INLINE f32x8 as_f32(u32x8 u) {
  f32x8 v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// Pairwise fold of the 16 lanes: 16 → 8 → 4 → 2 → 1.
TRELLIS_INLINE float fold(f32x8 lo, f32x8 hi) {
  float l[kLanes];
  std::memcpy(l, &lo, sizeof lo);
  std::memcpy(l + 8, &hi, sizeof hi);
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) l[i] += l[i + width];
  return l[0];
}

TRELLIS_INLINE void add_tail(f32x8& lo, f32x8& hi, const float* tail) {
  lo += load8(tail);
  hi += load8(tail + 8);
}

// y[r] = dot(w row r, x) for R consecutive rows of length `in`; x split (see top).
template <int R>
TRELLIS_INLINE void dot_rows(const uint16_t* w, int64_t in, const float* x, float* y) {
  f32x8 lo[R] = {}, hi[R] = {};
  const int64_t body = in - in % kLanes;
  const u32x8 high = {0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u,
                      0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u};
  for (int64_t i = 0; i < body; i += kLanes) {
    const f32x8 xe = load8(x + i), xo = load8(x + i + 8);
    for (int r = 0; r < R; ++r) {
      u32x8 u;
      std::memcpy(&u, w + r * in + i, sizeof u);
      lo[r] += as_f32(u << 16) * xe;
      hi[r] += as_f32(u & high) * xo;
    }
  }
  for (int r = 0; r < R; ++r) {
    float tail[kLanes] = {};
    for (int64_t i = body; i < in; ++i) tail[i - body] = bf16_to_float(w[r * in + i]) * x[i];
    add_tail(lo[r], hi[r], tail);
    y[r] = fold(lo[r], hi[r]);
  }
}

template <int R>
TRELLIS_INLINE void dot_rows(const float* w, int64_t in, const float* x, float* y) {
  f32x8 lo[R] = {}, hi[R] = {};
  const int64_t body = in - in % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    const f32x8 x0 = load8(x + i), x1 = load8(x + i + 8);
    for (int r = 0; r < R; ++r) {
      lo[r] += load8(w + r * in + i) * x0;
      hi[r] += load8(w + r * in + i + 8) * x1;
    }
  }
  for (int r = 0; r < R; ++r) {
    float tail[kLanes] = {};
    for (int64_t i = body; i < in; ++i) tail[i - body] = w[r * in + i] * x[i];
    add_tail(lo[r], hi[r], tail);
    y[r] = fold(lo[r], hi[r]);
  }
}

// Output-row blocks [b0, b1) for all M rows of x.
template <class W>
TRELLIS_INLINE void blocks(const W* w, int64_t out, int64_t in, const float* x, int64_t M, float* y, int64_t b0,
                           int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t o = b * kRows;
    const W* wb = w + o * in;
    float part[kRows];
    for (int64_t m = 0; m < M; ++m) {
      if (o + kRows <= out) {
        dot_rows<kRows>(wb, in, x + m * in, part);
        for (int64_t r = 0; r < kRows; ++r) y[m * out + o + r] = part[r];
      } else {
        for (int64_t r = 0; o + r < out; ++r) dot_rows<1>(wb + r * in, in, x + m * in, &y[m * out + o + r]);
      }
    }
  }
}

TRELLIS_CLONES void blocks_bf16(const uint16_t* w, int64_t out, int64_t in, const float* x, int64_t M, float* y,
                                int64_t b0, int64_t b1) {
  blocks(w, out, in, x, M, y, b0, b1);
}

TRELLIS_CLONES void blocks_f32(const float* w, int64_t out, int64_t in, const float* x, int64_t M, float* y,
                               int64_t b0, int64_t b1) {
  blocks(w, out, in, x, M, y, b0, b1);
}

// x split into even/odd halves per 16 inputs (the tail stays in order).
std::vector<float> split_even_odd(const float* x, int64_t M, int64_t in) {
  std::vector<float> s(x, x + M * in);
  const int64_t body = in - in % kLanes;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < body; i += kLanes)
      for (int j = 0; j < kLanes / 2; ++j) {
        s[size_t(m * in + i + j)] = x[m * in + i + 2 * j];
        s[size_t(m * in + i + 8 + j)] = x[m * in + i + 2 * j + 1];
      }
  return s;
}

}  // namespace

void matmul_bf16(ThreadPool& pool, const uint16_t* w, int64_t out, int64_t in, const float* x, int64_t M, float* y) {
  const std::vector<float> xs = split_even_odd(x, M, in);
  pool.parallel_for((out + kRows - 1) / kRows,
                    [&](int64_t b0, int64_t b1) { blocks_bf16(w, out, in, xs.data(), M, y, b0, b1); });
}

void matmul_f32(ThreadPool& pool, const float* w, int64_t out, int64_t in, const float* x, int64_t M, float* y) {
  pool.parallel_for((out + kRows - 1) / kRows,
                    [&](int64_t b0, int64_t b1) { blocks_f32(w, out, in, x, M, y, b0, b1); });
}

}  // namespace trellis::model::cpu
