// Tail-biting Viterbi encoder: every block it emits is a valid circular
// stream that decodes to exactly the states it chose, with the error it
// reports; with every overlap tried it is the exact circular optimum (checked
// against a plain reference DP over all start states); its bound is a bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/codec/viterbi.hpp"
#include "trellis/error.hpp"

namespace trellis {
namespace {

std::vector<float> gaussian_targets(std::mt19937_64& rng, int n, float sd) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(size_t(n), 0.0f);
  for (auto& x : v) x = nd(rng);
  return v;
}

double path_error(const std::vector<uint32_t>& states, const float* v) {
  double e = 0.0;
  for (size_t t = 0; t < states.size(); ++t) {
    const double d = double(code_value(states[t])) - double(v[t]);
    e += d * d;
  }
  return e;
}

// Exact circular optimum by brute force over the start state: for each s_0, a
// scalar DP over paths starting at s_0 whose last state shifts into s_0.
double reference_circular_optimum(const float* v, int T, int k, int L) {
  const uint32_t S = 1u << L, K = 1u << k, mask = S - 1u;
  const double inf = std::numeric_limits<double>::infinity();
  double best = inf;
  std::vector<double> cur(S), nxt(S);
  for (uint32_t s0 = 0; s0 < S; ++s0) {
    std::fill(cur.begin(), cur.end(), inf);
    const double d0 = double(code_value(s0)) - v[0];
    cur[s0] = d0 * d0;
    for (int t = 1; t < T; ++t) {
      std::fill(nxt.begin(), nxt.end(), inf);
      for (uint32_t p = 0; p < S; ++p) {
        if (cur[p] == inf) continue;
        for (uint32_t b = 0; b < K; ++b) {
          const uint32_t s = ((p << k) | b) & mask;
          const double d = double(code_value(s)) - v[t];
          nxt[s] = std::min(nxt[s], cur[p] + d * d);
        }
      }
      cur.swap(nxt);
    }
    for (uint32_t s = 0; s < S; ++s)
      if ((s & ((1u << (L - k)) - 1u)) == (s0 >> k)) best = std::min(best, cur[s]);
  }
  return best;
}

struct Shape {
  int k, L, T;
};

TEST(Viterbi, BlocksAreCircularStreamsOfTheChosenStates) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const Shape shapes[] = {{1, 2, 32},  {1, 9, 64},  {2, 3, 32},  {2, 12, 256}, {3, 4, 32}, {3, 12, 256},
                          {4, 12, 256}, {4, 16, 64}, {5, 11, 96}, {6, 9, 32},   {7, 10, 32}, {8, 9, 64},
                          {8, 16, 32},  {2, 16, 32}};
  for (const Shape& sh : shapes) {
    SCOPED_TRACE("k " + std::to_string(sh.k) + " L " + std::to_string(sh.L) + " T " + std::to_string(sh.T));
    ViterbiEncoder enc(sh.k, sh.L, sh.T);
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<float> v = gaussian_targets(rng, sh.T, 150.0f);
      std::vector<uint32_t> words(size_t(sh.T * sh.k / 32), 0xdeadbeefu), chosen(size_t(sh.T), ~0u),
          decoded(size_t(sh.T));
      const BlockEncoding e = enc.encode_block(v.data(), words.data(), chosen.data());
      decode_block_states(words.data(), sh.T, sh.k, sh.L, decoded.data());
      ASSERT_EQ(decoded, chosen);
      for (int t = 0; t < sh.T; ++t) ASSERT_EQ(block_state(words.data(), sh.T, sh.k, sh.L, t), chosen[size_t(t)]);
      EXPECT_NEAR(e.error, path_error(chosen, v.data()), 1e-9 * e.error);
      EXPECT_LE(e.lower_bound, e.error * (1.0 + 1e-6));
    }
  }
}

TEST(Viterbi, PackInvertsDecodeForAnyStream) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Shape& sh : {Shape{2, 12, 256}, Shape{3, 12, 256}, Shape{4, 16, 64}, Shape{5, 7, 32}}) {
    std::vector<uint32_t> words(size_t(sh.T * sh.k / 32)), states(size_t(sh.T)), packed(words.size());
    for (auto& w : words) w = uint32_t(rng());
    decode_block_states(words.data(), sh.T, sh.k, sh.L, states.data());
    pack_block_states(states.data(), sh.T, sh.k, packed.data());
    EXPECT_EQ(packed, words);
  }
}

TEST(Viterbi, AllOverlapsGiveTheExactCircularOptimum) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Shape& sh : {Shape{1, 5, 32}, Shape{2, 6, 32}, Shape{3, 7, 64}, Shape{2, 8, 64}}) {
    SCOPED_TRACE("k " + std::to_string(sh.k) + " L " + std::to_string(sh.L));
    const int overlaps = 1 << (sh.L - sh.k);
    ViterbiEncoder exhaustive(sh.k, sh.L, sh.T, overlaps), two_pass(sh.k, sh.L, sh.T, 1),
        default_enc(sh.k, sh.L, sh.T);
    for (int rep = 0; rep < 4; ++rep) {
      const std::vector<float> v = gaussian_targets(rng, sh.T, 150.0f);
      std::vector<uint32_t> words(size_t(sh.T * sh.k / 32));
      const double opt = reference_circular_optimum(v.data(), sh.T, sh.k, sh.L);
      const BlockEncoding ex = exhaustive.encode_block(v.data(), words.data());
      EXPECT_TRUE(ex.certified);
      EXPECT_NEAR(ex.error, opt, 1e-4 * opt);
      for (ViterbiEncoder* enc : {&two_pass, &default_enc}) {
        const BlockEncoding e = enc->encode_block(v.data(), words.data());
        EXPECT_GE(e.error, opt * (1.0 - 1e-5));
        if (e.certified) {
          EXPECT_NEAR(e.error, opt, 1e-4 * opt);
        }
      }
    }
  }
}

TEST(Viterbi, RejectsBadParameters) {
  EXPECT_THROW(ViterbiEncoder(0, 12, 256), Error);
  EXPECT_THROW(ViterbiEncoder(9, 16, 256), Error);
  EXPECT_THROW(ViterbiEncoder(3, 3, 256), Error);
  EXPECT_THROW(ViterbiEncoder(3, 17, 256), Error);
  EXPECT_THROW(ViterbiEncoder(3, 12, 48), Error);
  EXPECT_THROW(ViterbiEncoder(3, 12, 256, 0), Error);
}

}  // namespace
}  // namespace trellis
