// Fused gate/up/SwiGLU on the CPU (fresh seed per run).
//   - split tail, every numerics mode: bit-identical to two bf16
//     trellis_linear calls followed by the standalone swiglu — with gate and
//     up of different k (and L, T), M in {1, 5, 8}; outputs poisoned first.
//   - fused tail: within 1.5e-2 (‖·‖₂ relative) of silu(g)·u computed in
//     fp64 from linear_reference_f64 — g and u carry ≤ 2^-8 each (bf16, plus
//     the weights' rounding in `rounded`), the tail three more bf16 roundings;
//     measured ≤ 6e-3.
//   - gate and up with different in/out features are rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "random_trellis.hpp"
#include "rel_error.hpp"
#include "trellis/cpu/gate_up.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/cpu/swiglu.hpp"
#include "trellis/error.hpp"
#include "trellis/geometry.hpp"

namespace trellis {
namespace {

constexpr Numerics kModes[] = {Numerics::rounded, Numerics::f32, Numerics::factored};
constexpr int64_t kF = 96, kIn = 512;

struct Pair {
  test::RandomTrellis gate, up;
};

Pair make_pair(std::mt19937_64& rng) {
  return {test::random_trellis(rng, make_geometry(2, 12, 256, 1, kF, kIn)),
          test::random_trellis(rng, make_geometry(4, 16, 128, 1, kF, kIn))};
}

std::vector<uint16_t> run(const Pair& p, Numerics mode, SwigluTail tail, const std::vector<uint16_t>& x, int64_t M) {
  std::vector<uint16_t> out(size_t(M * kF), test::kPoisonBf16);
  cpu::gate_up_swiglu(p.gate.view(), p.up.view(), mode, tail, x.data(), M, out.data());
  return out;
}

TEST(GateUp, SplitTailIsTwoProjectionsThenSwiglu) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const Pair p = make_pair(rng);
  for (int64_t M : {1, 5, 8}) {
    const auto x = test::random_bf16(rng, size_t(M * kIn));
    for (Numerics mode : kModes) {
      SCOPED_TRACE(std::string(to_string(mode)) + " M=" + std::to_string(M));
      std::vector<uint16_t> g(size_t(M * kF)), u(g.size()), want(g.size());
      cpu::trellis_linear(p.gate.view(), mode, x.data(), M, g.data());
      cpu::trellis_linear(p.up.view(), mode, x.data(), M, u.data());
      cpu::swiglu(g.data(), u.data(), want.data(), int64_t(g.size()));
      const auto got = run(p, mode, SwigluTail::split, x, M);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

TEST(GateUp, FusedTailWithinBoundOfExact) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const Pair p = make_pair(rng);
  double worst = 0.0;
  for (int64_t M : {1, 5, 8}) {
    const auto x = test::random_bf16(rng, size_t(M * kIn));
    const auto xf = test::bf16_to_f32(x);
    std::vector<double> g(size_t(M * kF)), u(g.size()), ref(g.size());
    cpu::linear_reference_f64(p.gate.view(), xf.data(), M, g.data());
    cpu::linear_reference_f64(p.up.view(), xf.data(), M, u.data());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    for (Numerics mode : kModes) {
      SCOPED_TRACE(std::string(to_string(mode)) + " M=" + std::to_string(M));
      const double e = test::rel_error(test::widen(run(p, mode, SwigluTail::fused, x, M)), ref);
      EXPECT_LE(e, 1.5e-2);
      worst = std::max(worst, e);
    }
  }
  std::printf("[measured] fused tail max rel error %.2e (bound 1.5e-2)\n", worst);
}

TEST(GateUp, RejectsMismatchedProjections) {
  std::mt19937_64 rng(2);
  const auto gate = test::random_trellis(rng, make_geometry(2, 12, 256, 1, 64, 256));
  const auto up = test::random_trellis(rng, make_geometry(2, 12, 256, 1, 72, 256));
  const std::vector<uint16_t> x(256, 0);
  std::vector<uint16_t> out(72);
  EXPECT_THROW(cpu::gate_up_swiglu(gate.view(), up.view(), Numerics::f32, SwigluTail::split, x.data(), 1, out.data()),
               Error);
}

}  // namespace
}  // namespace trellis
