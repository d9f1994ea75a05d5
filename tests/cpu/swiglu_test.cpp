// bf16 SwiGLU tails (SPEC §4).
//   - Hand-worked values. split(0.5, 1): e = bf16(e^0.5 = 1.64872) = 1.6484375,
//     d = bf16(2.6484375) = 2.65625 (tie, to even), v = bf16(0.376471) =
//     0.376953125, sigma = bf16(0.623046875) = 0.625 (tie, to even),
//     silu = 0.3125 = 0x3ea0. fused(0.5, 1): sigma = bf16(0.6224593) =
//     0.62109375, silu = 0.310546875 = 0x3e9f. g = −2: split 0xbe75, fused
//     0xbe74; g = 1: both 0x3f3b (0.73046875).
//   - Every finite bf16 gate, with a random bf16 up (fresh seed per run;
//     products beyond the fp32 range are skipped):
//     |out − g·σ(g)·up| ≤ n·2^-8·|g·σ(g)·up| + 1e-36, n = 7 for split (seven
//     bf16 roundings in the chain) and n = 4 for fused (four), the absolute
//     slack covering fp32/bf16 underflow at g ≲ −87.
//   - The tails really differ (some gates disagree) but agree on most.
//   - NaN in gives NaN out; +inf gives +inf; swiglu() applies swiglu_split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/cpu/swiglu.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

using cpu::swiglu_fused;
using cpu::swiglu_split;

uint16_t bf(float f) { return float_to_bf16(f); }

TEST(Swiglu, HandWorkedValues) {
  EXPECT_EQ(swiglu_split(bf(0.5f), bf(1.0f)), 0x3ea0);
  EXPECT_EQ(swiglu_fused(bf(0.5f), bf(1.0f)), 0x3e9f);
  EXPECT_EQ(swiglu_split(bf(-2.0f), bf(1.0f)), 0xbe75);
  EXPECT_EQ(swiglu_fused(bf(-2.0f), bf(1.0f)), 0xbe74);
  EXPECT_EQ(swiglu_split(bf(1.0f), bf(1.0f)), 0x3f3b);
  EXPECT_EQ(swiglu_fused(bf(1.0f), bf(1.0f)), 0x3f3b);
  EXPECT_EQ(swiglu_split(bf(0.5f), bf(2.0f)), bf(0.625f));
  EXPECT_EQ(swiglu_split(bf(0.0f), bf(3.0f)), 0x0000);
  EXPECT_EQ(swiglu_fused(bf(0.0f), bf(3.0f)), 0x0000);
}

TEST(Swiglu, EveryGateWithinBoundOfExact) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  int differ = 0, finite = 0;
  double worst_split = 0.0, worst_fused = 0.0;
  for (uint32_t gb = 0; gb < 65536; ++gb) {
    const float g = bf16_to_float(uint16_t(gb));
    if (!std::isfinite(g)) continue;
    ++finite;
    const uint16_t up = bf(nd(rng));
    const double exact = double(g) / (1.0 + std::exp(-double(g))) * double(bf16_to_float(up));
    if (std::fabs(exact) > 3e38) continue;  // beyond fp32/bf16 range: overflows by design
    const double s = bf16_to_float(swiglu_split(uint16_t(gb), up));
    const double f = bf16_to_float(swiglu_fused(uint16_t(gb), up));
    const double ulp = std::ldexp(1.0, -8) * std::fabs(exact);
    ASSERT_LE(std::fabs(s - exact), 7 * ulp + 1e-36) << "split, g=" << g << " up=" << bf16_to_float(up);
    ASSERT_LE(std::fabs(f - exact), 4 * ulp + 1e-36) << "fused, g=" << g << " up=" << bf16_to_float(up);
    if (std::fabs(exact) > 1e-30) {
      worst_split = std::max(worst_split, std::fabs(s - exact) / ulp);
      worst_fused = std::max(worst_fused, std::fabs(f - exact) / ulp);
    }
    differ += swiglu_split(uint16_t(gb), up) != swiglu_fused(uint16_t(gb), up);
  }
  std::printf("[measured] max error in units of 2^-8|exact|: split %.2f, fused %.2f; tails differ on %d of %d gates\n",
              worst_split, worst_fused, differ, finite);
  EXPECT_GT(differ, 0);
  EXPECT_LT(differ, finite / 2);
}

TEST(Swiglu, SpecialValuesAndArrayForm) {
  const uint16_t nan = 0x7fc0, inf = 0x7f80;
  EXPECT_TRUE(std::isnan(bf16_to_float(swiglu_split(nan, bf(1.0f)))));
  EXPECT_TRUE(std::isnan(bf16_to_float(swiglu_fused(nan, bf(1.0f)))));
  EXPECT_TRUE(std::isnan(bf16_to_float(swiglu_split(bf(1.0f), nan))));
  EXPECT_EQ(swiglu_split(inf, bf(1.0f)), inf);
  EXPECT_EQ(swiglu_fused(inf, bf(1.0f)), inf);

  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const auto gate = test::random_bf16(rng, 1000), up = test::random_bf16(rng, 1000);
  std::vector<uint16_t> out(1000, 0x7fc1);
  cpu::swiglu(gate.data(), up.data(), out.data(), 1000);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], swiglu_split(gate[i], up[i])) << "element " << i;
}

}  // namespace
}  // namespace trellis
