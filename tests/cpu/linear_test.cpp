// CPU trellis linear against the fp64 reference and against itself across
// storage forms (fresh seed per run; TRELLIS_TEST_SEED reproduces one).
//
//   - Every mode, axis and layout, fp32 and bf16 outputs (poisoned with NaN
//     first), within a stated ‖out − ref‖/‖ref‖ bound of linear_reference_f64
//     on the same (bf16) activations. bf16 has an 8-bit significand, so a
//     rounding moves a value by ≤ 2^-8 ≈ 3.9e-3 of itself (≈ 1.1e-3 rms here):
//       fp32 out: f32, factored 1e-5 (fp32 sums; measured ≤ 9e-7);
//                 rounded 6e-3 (bf16 weights, statistical; measured ≤ 3.3e-3
//                 over 200 runs);
//       bf16 out: f32, factored 4e-3 (≤ 2^-8 per output, a hard bound);
//                 rounded 8e-3 (measured ≤ 3.8e-3 over 200 runs).
//   - rounded (resp. f32) equals expand_to_bf16 (resp. expand_to_f32)
//     followed by a plain fp32 GEMM with i ascending, bit for bit — the
//     summation order the header promises.
//   - k3 interleaved axis 0 equals the same codes row-major, bit for bit.
//   - Axis 0 vs axis 1 on the same code words and scales (rows = R, cols = C
//     in both): the axis-1 tensor is W1 [R, C], the axis-0 tensor is
//     W0 = W1ᵀ [C, R]. Without an encoder this is the meaningful "same W on
//     both axes" check: feeding the C×C identity to the axis-1 kernel yields
//     Z = W1ᵀ in its own numerics (exact in f32 / rounded: one nonzero term
//     per sum), and the axis-0 kernel on x must equal Z·x computed as a plain
//     fp32 GEMM — bit for bit in rounded and f32, within 1e-5 in factored
//     (which folds f_i into x instead).
//   - Results do not depend on the thread count; bad geometry throws.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "random_trellis.hpp"
#include "rel_error.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/cpu/threads.hpp"
#include "trellis/error.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

constexpr Numerics kModes[] = {Numerics::rounded, Numerics::f32, Numerics::factored};

double bound_f32_out(Numerics m) { return m == Numerics::rounded ? 6e-3 : 1e-5; }
double bound_bf16_out(Numerics m) { return m == Numerics::rounded ? 8e-3 : 4e-3; }

struct Shape {
  int k, L, T, axis, interleave;
  int64_t out, in;
};

std::string describe(const Shape& s, int64_t M) {
  return "k=" + std::to_string(s.k) + " L=" + std::to_string(s.L) + " T=" + std::to_string(s.T) +
         " axis=" + std::to_string(s.axis) + " interleave=" + std::to_string(s.interleave) +
         " out=" + std::to_string(s.out) + " in=" + std::to_string(s.in) + " M=" + std::to_string(M);
}

// Every shape has ≥ 40 stored rows: the bf16 rounding error of a row's
// weights depends on its factor f_r, so few rows make the measured error
// itself noisy.
const Shape kShapes[] = {
    {2, 12, 256, 1, 0, 64, 512},  {3, 12, 256, 1, 0, 40, 768}, {4, 16, 128, 1, 0, 64, 384},
    {5, 12, 64, 1, 0, 48, 192},   {2, 12, 256, 0, 0, 512, 40}, {3, 12, 256, 0, 0, 1024, 48},
    {3, 12, 256, 0, 2, 1024, 48}, {4, 16, 64, 0, 0, 192, 64},  {8, 16, 32, 0, 0, 96, 64},
};

test::RandomTrellis make(std::mt19937_64& rng, const Shape& s) {
  return test::random_trellis(rng, make_geometry(s.k, s.L, s.T, s.axis, s.out, s.in, s.interleave));
}

// y[m][o] = Σ_i W[o][i]·x[m][i], one fp32 accumulator, i ascending.
std::vector<float> gemm_f32(const std::vector<float>& W, const std::vector<float>& x, int64_t M,
                            int64_t out, int64_t in) {
  std::vector<float> y(size_t(M * out));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t i = 0; i < in; ++i) acc += W[size_t(o * in + i)] * x[size_t(m * in + i)];
      y[size_t(m * out + o)] = acc;
    }
  return y;
}

std::vector<float> run_f32(const TrellisTensorView& w, Numerics mode, const std::vector<uint16_t>& x, int64_t M) {
  std::vector<float> y(size_t(M * w.geom.out_features), test::kPoisonF32);
  cpu::trellis_linear_f32(w, mode, x.data(), M, y.data());
  return y;
}

std::vector<uint16_t> run_bf16(const TrellisTensorView& w, Numerics mode, const std::vector<uint16_t>& x, int64_t M) {
  std::vector<uint16_t> y(size_t(M * w.geom.out_features), test::kPoisonBf16);
  cpu::trellis_linear(w, mode, x.data(), M, y.data());
  return y;
}

void expect_bitwise_equal(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(float_to_bits(a[i]), float_to_bits(b[i])) << what << ", element " << i << ": " << a[i] << " vs " << b[i];
}

TEST(CpuLinear, EveryModeWithinBoundOfReference) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  double worst_f32[3] = {}, worst_bf16[3] = {};
  for (const Shape& s : kShapes)
    for (int64_t M : {1, 2, 4, 9}) {
      SCOPED_TRACE(describe(s, M));
      const auto t = make(rng, s);
      const auto x = test::random_bf16(rng, size_t(M * s.in));
      const auto xf = test::bf16_to_f32(x);
      std::vector<double> ref(size_t(M * s.out));
      cpu::linear_reference_f64(t.view(), xf.data(), M, ref.data());
      for (Numerics mode : kModes) {
        SCOPED_TRACE(to_string(mode));
        const double e32 = test::rel_error(test::widen(run_f32(t.view(), mode, x, M)), ref);
        const double e16 = test::rel_error(test::widen(run_bf16(t.view(), mode, x, M)), ref);
        EXPECT_LE(e32, bound_f32_out(mode)) << "fp32 output";
        EXPECT_LE(e16, bound_bf16_out(mode)) << "bf16 output";
        worst_f32[int(mode)] = std::max(worst_f32[int(mode)], e32);
        worst_bf16[int(mode)] = std::max(worst_bf16[int(mode)], e16);
      }
    }
  for (Numerics mode : kModes)
    std::printf("[measured] %-8s max rel error: fp32 out %.2e (bound %.0e), bf16 out %.2e (bound %.0e)\n",
                to_string(mode), worst_f32[int(mode)], bound_f32_out(mode), worst_bf16[int(mode)],
                bound_bf16_out(mode));
}

TEST(CpuLinear, RoundedAndF32EqualExpandThenGemm) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    const int64_t M = 3;
    SCOPED_TRACE(describe(s, M));
    const auto t = make(rng, s);
    const auto x = test::random_bf16(rng, size_t(M * s.in));
    std::vector<uint16_t> Wb(size_t(s.out * s.in));
    std::vector<float> Wf(Wb.size());
    expand_to_bf16(t.view(), Wb.data());
    expand_to_f32(t.view(), Wf.data());
    const auto xf = test::bf16_to_f32(x);
    expect_bitwise_equal(run_f32(t.view(), Numerics::rounded, x, M),
                         gemm_f32(test::bf16_to_f32(Wb), xf, M, s.out, s.in), "rounded");
    expect_bitwise_equal(run_f32(t.view(), Numerics::f32, x, M), gemm_f32(Wf, xf, M, s.out, s.in), "f32");
    const auto yb = run_bf16(t.view(), Numerics::rounded, x, M);
    const auto yg = gemm_f32(test::bf16_to_f32(Wb), xf, M, s.out, s.in);
    for (size_t i = 0; i < yb.size(); ++i) ASSERT_EQ(yb[i], float_to_bf16(yg[i])) << "bf16 output, element " << i;
  }
}

TEST(CpuLinear, K3InterleavedEqualsRowMajor) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const Shape s{3, 12, 256, 0, 0, 1536, 32};
  const auto rm = make(rng, s);
  auto il = rm;
  il.geom.block_interleave = 2;
  // [cols/512, rows, 48]: block pair p of stored row r = block 2p, then block 2p+1.
  for (int64_t r = 0; r < rm.geom.rows; ++r)
    for (int64_t b = 0; b < rm.geom.blocks_per_row(); ++b)
      for (int w = 0; w < 24; ++w)
        il.codes[size_t(((b / 2) * rm.geom.rows + r) * 48 + (b % 2) * 24 + w)] =
            rm.codes[size_t(r * rm.geom.words_per_row() + b * 24 + w)];
  for (int64_t M : {1, 5}) {
    const auto x = test::random_bf16(rng, size_t(M * s.in));
    for (Numerics mode : kModes)
      expect_bitwise_equal(run_f32(il.view(), mode, x, M), run_f32(rm.view(), mode, x, M),
                           std::string(to_string(mode)) + " M=" + std::to_string(M));
  }
}

TEST(CpuLinear, AxisZeroAppliesTransposeOfAxisOne) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int k : {2, 3, 4}) {
    const int64_t R = 32, C = 512, M = 3;
    SCOPED_TRACE("k=" + std::to_string(k));
    const auto a1 = test::random_trellis(rng, make_geometry(k, 12, 256, 1, /*out*/ R, /*in*/ C));
    auto a0 = a1;
    a0.geom = make_geometry(k, 12, 256, 0, /*out*/ C, /*in*/ R);
    std::vector<uint16_t> eye(size_t(C * C), 0);
    for (int64_t c = 0; c < C; ++c) eye[size_t(c * C + c)] = float_to_bf16(1.0f);
    const auto x = test::random_bf16(rng, size_t(M * R));
    const auto xf = test::bf16_to_f32(x);
    for (Numerics mode : kModes) {
      SCOPED_TRACE(to_string(mode));
      const auto Z = run_f32(a1.view(), mode, eye, C);  // Z[c][r] = W1[r][c] = W0[c][r]
      const auto y0 = run_f32(a0.view(), mode, x, M);
      const auto want = gemm_f32(Z, xf, M, C, R);
      if (mode == Numerics::factored)
        EXPECT_LE(test::rel_error(test::widen(y0), test::widen(want)), 1e-5);
      else
        expect_bitwise_equal(y0, want, "axis 0 vs transpose of axis 1");
    }
  }
}

TEST(CpuLinear, ThreadCountDoesNotChangeResults) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Shape& s : {Shape{3, 12, 256, 1, 0, 256, 1024}, Shape{3, 12, 256, 0, 2, 1024, 256}})
    for (int64_t M : {1, 7, 130}) {
      SCOPED_TRACE(describe(s, M));
      const auto t = make(rng, s);
      const auto x = test::random_bf16(rng, size_t(M * s.in));
      for (Numerics mode : kModes) {
        cpu::set_thread_count(1);
        const auto one = run_f32(t.view(), mode, x, M);
        for (int n : {2, 3, 8}) {
          cpu::set_thread_count(n);
          expect_bitwise_equal(run_f32(t.view(), mode, x, M), one,
                               std::string(to_string(mode)) + " threads=" + std::to_string(n));
        }
      }
      cpu::set_thread_count(0);
    }
}

TEST(CpuLinear, RejectsBadGeometryAndAcceptsEmptyBatch) {
  std::mt19937_64 rng(1);
  const auto good = test::random_trellis(rng, make_geometry(2, 12, 256, 1, 16, 256));
  const std::vector<uint16_t> x(256, 0);
  std::vector<float> y(16);
  auto bad = [&](auto edit) {
    TrellisTensorView v = good.view();
    edit(v.geom);
    return v;
  };
  EXPECT_THROW(cpu::trellis_linear_f32(bad([](TrellisGeometry& g) { g.L = 2; }), Numerics::f32, x.data(), 1, y.data()), Error);
  EXPECT_THROW(cpu::trellis_linear_f32(bad([](TrellisGeometry& g) { g.T = 48; }), Numerics::f32, x.data(), 1, y.data()), Error);
  EXPECT_THROW(cpu::trellis_linear_f32(bad([](TrellisGeometry& g) { g.rows = g.out_features = 12; }), Numerics::f32, x.data(), 1, y.data()), Error);
  EXPECT_THROW(cpu::trellis_linear_f32(bad([](TrellisGeometry& g) { g.block_interleave = 2; }), Numerics::f32, x.data(), 1, y.data()), Error);
  EXPECT_THROW(cpu::trellis_linear_f32(bad([](TrellisGeometry& g) { g.axis = 0; }), Numerics::f32, x.data(), 1, y.data()), Error);
  EXPECT_NO_THROW(cpu::trellis_linear_f32(good.view(), Numerics::f32, x.data(), 0, y.data()));
}

}  // namespace
}  // namespace trellis
