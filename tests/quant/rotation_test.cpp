// Hadamard rotation (SPEC §5): the transform is the normalized Sylvester
// Hadamard matrix, H·H = I, the sign draw is deterministic, the row helpers
// invert each other, and the inference identities hold for both axes.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/error.hpp"

namespace trellis {
namespace {

std::vector<float> gaussian(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> nd;
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

TEST(Rotation, FwhtIsTheNormalizedSylvesterMatrix) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int T : {1, 2, 32, 256}) {
    const std::vector<float> x = gaussian(rng, size_t(2 * T));
    std::vector<float> y = x;
    fwht_normalized(y.data(), 2, T);
    for (int blk = 0; blk < 2; ++blk)
      for (int i = 0; i < T; ++i) {
        double ref = 0.0;
        for (int j = 0; j < T; ++j)
          ref += (std::popcount(unsigned(i & j)) % 2 ? -1.0 : 1.0) * x[size_t(blk * T + j)];
        ref /= std::sqrt(double(T));
        EXPECT_NEAR(y[size_t(blk * T + i)], ref, 1e-5 * std::sqrt(double(T)));
      }
  }
}

TEST(Rotation, HadamardSquaredIsIdentityAndNormIsKept) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::vector<float> x = gaussian(rng, 4 * 256);
  std::vector<float> y = x;
  fwht_normalized(y.data(), 4, 256);
  double nx = 0.0, ny = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    nx += double(x[i]) * x[i];
    ny += double(y[i]) * y[i];
  }
  EXPECT_NEAR(ny, nx, 1e-5 * nx);
  fwht_normalized(y.data(), 4, 256);
  EXPECT_LT(max_abs_diff(x, y), 1e-5);
}

TEST(Rotation, SignsAreDeterministicAndBalanced) {
  const std::vector<int8_t> a = random_signs(5000, 42), b = random_signs(5000, 42), c = random_signs(5000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int sum = 0;
  for (int8_t s : a) {
    ASSERT_TRUE(s == 1 || s == -1);
    sum += s;
  }
  EXPECT_LT(std::abs(sum), 300);  // ~4σ for 5000 fair signs
}

TEST(Rotation, RowHelpersInvertEachOther) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const int64_t m = 3, n = 512;
  const std::vector<int8_t> s = random_signs(n, seed);
  const std::vector<float> x = gaussian(rng, size_t(m * n));
  std::vector<float> y = x;
  rotate_rows(y.data(), m, n, s.data(), 256);
  EXPECT_GT(max_abs_diff(x, y), 0.1);
  unrotate_rows(y.data(), m, n, s.data(), 256);
  EXPECT_LT(max_abs_diff(x, y), 1e-5);
}

// y = W x through the stored rotated matrix, both axes.
TEST(Rotation, InferenceIdentities) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const int64_t out = 256, in = 512;
  const int T = 256;
  const std::vector<float> W = gaussian(rng, size_t(out * in)), x = gaussian(rng, size_t(in));
  std::vector<double> ref(size_t(out), 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) ref[size_t(o)] += double(W[size_t(o * in + i)]) * x[size_t(i)];

  // axis 1: stored rows are rows of W (length in); y = W' (H (s ⊙ x)).
  {
    const std::vector<int8_t> s = random_signs(in, 1);
    std::vector<float> Wp = W, xr = x;
    rotate_rows(Wp.data(), out, in, s.data(), T);
    rotate_rows(xr.data(), 1, in, s.data(), T);
    for (int64_t o = 0; o < out; ++o) {
      double y = 0.0;
      for (int64_t i = 0; i < in; ++i) y += double(Wp[size_t(o * in + i)]) * xr[size_t(i)];
      EXPECT_NEAR(y, ref[size_t(o)], 1e-3);
    }
  }
  // axis 0: stored rows are columns of W (length out); y = s ⊙ (H (W' x)).
  {
    const std::vector<int8_t> s = random_signs(out, 2);
    std::vector<float> Wt(size_t(in * out));
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) Wt[size_t(i * out + o)] = W[size_t(o * in + i)];
    rotate_rows(Wt.data(), in, out, s.data(), T);  // W'ᵀ
    std::vector<float> y(size_t(out), 0.0f);
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < in; ++i) acc += double(Wt[size_t(i * out + o)]) * x[size_t(i)];
      y[size_t(o)] = float(acc);
    }
    unrotate_rows(y.data(), 1, out, s.data(), T);
    for (int64_t o = 0; o < out; ++o) EXPECT_NEAR(y[size_t(o)], ref[size_t(o)], 1e-3);
  }
}

TEST(Rotation, RejectsBlocksThatAreNotPowersOfTwo) {
  std::vector<float> x(96, 1.0f);
  const std::vector<int8_t> s(96, 1);
  EXPECT_THROW(fwht_normalized(x.data(), 1, 96), Error);
  EXPECT_THROW(rotate_rows(x.data(), 1, 96, s.data(), 64), Error);
}

}  // namespace
}  // namespace trellis
