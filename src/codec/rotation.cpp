// Block Walsh–Hadamard transform and the sign/rotation helpers (math and
// contract in include/trellis/codec/rotation.hpp).
//
// fwht: log2(T) butterfly stages (a, b) ← (a + b, a − b) over pairs at
// distance 1, 2, 4, …, T/2, then a scale by 1/√T. Signs come from splitmix64
// (one output word per 64 signs, bit i → sign i), which is fully specified,
// unlike the standard library's distributions.
#include "trellis/codec/rotation.hpp"

#include <cmath>
#include <string>

#include "trellis/error.hpp"

namespace trellis {

namespace {

void check_block(int T) {
  if (T < 1 || (T & (T - 1)) != 0)
    throw Error("hadamard rotation: block " + std::to_string(T) + " is not a power of two");
}

void check_row(int64_t n, int T) {
  check_block(T);
  if (n % T != 0)
    throw Error("hadamard rotation: row length " + std::to_string(n) + " is not a multiple of the block " +
                std::to_string(T));
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void fwht_normalized(float* x, int64_t n_blocks, int T) {
  check_block(T);
  const float norm = float(1.0 / std::sqrt(double(T)));
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    float* b = x + blk * T;
    for (int len = 1; len < T; len <<= 1) {
      for (int i = 0; i < T; i += 2 * len) {
        for (int j = i; j < i + len; ++j) {
          const float u = b[j];
          const float w = b[j + len];
          b[j] = u + w;
          b[j + len] = u - w;
        }
      }
    }
    for (int i = 0; i < T; ++i) b[i] *= norm;
  }
}

std::vector<int8_t> random_signs(int64_t n, uint64_t seed) {
  std::vector<int8_t> s(size_t(n > 0 ? n : 0));
  uint64_t state = seed;
  uint64_t bits = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 64 == 0) bits = splitmix64(state);
    s[size_t(i)] = ((bits >> (i % 64)) & 1u) ? int8_t(-1) : int8_t(1);
  }
  return s;
}

void rotate_rows(float* x, int64_t m, int64_t n, const int8_t* signs, int T) {
  check_row(n, T);
  for (int64_t r = 0; r < m; ++r) {
    float* row = x + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] *= float(signs[i]);
    fwht_normalized(row, n / T, T);
  }
}

void unrotate_rows(float* x, int64_t m, int64_t n, const int8_t* signs, int T) {
  check_row(n, T);
  for (int64_t r = 0; r < m; ++r) {
    float* row = x + r * n;
    fwht_normalized(row, n / T, T);
    for (int64_t i = 0; i < n; ++i) row[i] *= float(signs[i]);
  }
}

}  // namespace trellis
