// Dense matmul (contract in dense_matmul.hpp). dot_rows computes R dot
// products of R consecutive weight rows with one activation row; the lane
// arrays let the compiler vectorize without reassociating any sum.
#include "dense_matmul.hpp"

#include "trellis/half.hpp"

namespace trellis::model::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int64_t kRows = 4;  // output rows per block

inline float widen(uint16_t b) { return bf16_to_float(b); }
inline float widen(float f) { return f; }

// Pairwise fold 16 → 8 → 4 → 2 → 1.
inline float fold(float* lanes) {
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  return lanes[0];
}

template <int R, class W>
void dot_rows(const W* w, int64_t in, const float* x, float* y) {
  float acc[R][kLanes] = {};
  const int64_t body = in - in % kLanes;
  for (int64_t i = 0; i < body; i += kLanes)
    for (int r = 0; r < R; ++r)
      for (int l = 0; l < kLanes; ++l) acc[r][l] += widen(w[r * in + i + l]) * x[i + l];
  for (int64_t i = body; i < in; ++i)
    for (int r = 0; r < R; ++r) acc[r][i - body] += widen(w[r * in + i]) * x[i];
  for (int r = 0; r < R; ++r) y[r] = fold(acc[r]);
}

template <class W>
void matmul(ThreadPool& pool, const W* w, int64_t out, int64_t in, const float* x, int64_t M, float* y) {
  const int64_t blocks = (out + kRows - 1) / kRows;
  pool.parallel_for(blocks, [&](int64_t b0, int64_t b1) {
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
  });
}

}  // namespace

void matmul_bf16(ThreadPool& pool, const uint16_t* w, int64_t out, int64_t in, const float* x, int64_t M, float* y) {
  matmul(pool, w, out, in, x, M, y);
}

void matmul_f32(ThreadPool& pool, const float* w, int64_t out, int64_t in, const float* x, int64_t M, float* y) {
  matmul(pool, w, out, in, x, M, y);
}

}  // namespace trellis::model::cpu
