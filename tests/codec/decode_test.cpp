// The decode paths against the definition, on random blocks (fresh seed per
// run; TRELLIS_TEST_SEED reproduces one):
//   - bit_by_bit_state below is SPEC §2 read literally: stream bit i is bit
//     i mod 32 of word i/32, state_t collects L bits from (T−1−t)·k, wrapping,
//     first bit least significant;
//   - block_state (the O(1) window) and decode_block_states (the recurrence
//     state_{t+1} = ((state_t << k) | next k bits) mod 2^L) must equal it for
//     every t, for k in 1..8, L in k+1..16, T in {32, 64, 256};
//   - code_value over all 2^16 states stays in [−510, 510] with mean ≈ 0 and
//     standard deviation ≈ 147.8 (the constant RCP normalizes by).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"

namespace trellis {
namespace {

uint32_t bit_by_bit_state(const std::vector<uint32_t>& words, int T, int k, int L, int t) {
  const uint64_t nbits = uint64_t(T) * uint64_t(k);
  uint32_t s = 0;
  for (int j = 0; j < L; ++j) {
    const uint64_t i = (uint64_t(T - 1 - t) * uint64_t(k) + uint64_t(j)) % nbits;
    s |= ((words[i / 32] >> (i % 32)) & 1u) << j;
  }
  return s;
}

TEST(Decode, RecurrenceAndWindowMatchDefinition) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int T : {32, 64, 256})
    for (int k = 1; k <= 8; ++k)
      for (int L = k + 1; L <= 16; ++L)
        for (int rep = 0; rep < 3; ++rep) {
          std::vector<uint32_t> words(size_t(T * k / 32));
          for (auto& w : words) w = uint32_t(rng());
          std::vector<uint32_t> states(static_cast<size_t>(T));
          decode_block_states(words.data(), T, k, L, states.data());
          for (int t = 0; t < T; ++t) {
            const uint32_t want = bit_by_bit_state(words, T, k, L, t);
            ASSERT_EQ(block_state(words.data(), T, k, L, t), want)
                << "block_state T=" << T << " k=" << k << " L=" << L << " t=" << t;
            ASSERT_EQ(states[size_t(t)], want)
                << "decode_block_states T=" << T << " k=" << k << " L=" << L << " t=" << t;
          }
        }
}

TEST(Decode, CodeValueRangeAndMoments) {
  double sum = 0.0, sum2 = 0.0;
  for (uint32_t s = 0; s < 65536; ++s) {
    const int y = code_value(s);
    ASSERT_GE(y, -510);
    ASSERT_LE(y, 510);
    sum += y;
    sum2 += double(y) * y;
  }
  const double mean = sum / 65536.0;
  const double sd = std::sqrt(sum2 / 65536.0 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.5);
  EXPECT_NEAR(sd, 147.8, 0.15);
  EXPECT_EQ(kCodeRcp, float(1.0 / 147.800537109375));
}

}  // namespace
}  // namespace trellis
