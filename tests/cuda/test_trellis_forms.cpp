// Every CUDA trellis form against the fp64 CPU reference (SPEC §3): random
// codes, scales and activations drawn fresh each run (the seed is printed),
// outputs poisoned with NaN before each launch so unwritten elements fail.
//
// Bounds (‖out − ref‖/‖ref‖, bf16 outputs whose own rounding is ≈ 1.6e-3 rms):
//   factored, f32 : 4e-3     rounded (bf16 weights) : 6e-3
//   SwiGLU outputs (bf16 gate/up and every tail step rounded): 1.5e-2
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <tuple>
#include <vector>

#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/half.hpp"
#include "trellis_fixture.hpp"

namespace trellis::test {
namespace {

using cuda::Form;

double bound(Numerics mode) { return mode == Numerics::rounded ? 6e-3 : 4e-3; }

struct Shape {
  int64_t out, in;
};
const Shape kShapes[] = {{17408, 5120}, {5120, 17408}, {1024, 5120}, {5120, 1024}, {264, 768}, {768, 264}};

std::vector<std::pair<Form, Numerics>> forms_for(int axis) {
  std::vector<std::pair<Form, Numerics>> f = {{Form::mma, Numerics::factored},
                                              {Form::imma, Numerics::factored},
                                              {Form::expand_cublas, Numerics::rounded}};
  const Form core = axis == 1 ? Form::reduce : Form::scatter;
  for (Numerics n : {Numerics::rounded, Numerics::f32, Numerics::factored}) f.push_back({core, n});
  return f;
}

class LinearForms : public ::testing::TestWithParam<std::tuple<Shape, int, int>> {};

// Every (shape, axis, k) whose coded axis is a multiple of T = 256.
std::vector<std::tuple<Shape, int, int>> linear_cases() {
  std::vector<std::tuple<Shape, int, int>> v;
  for (const Shape s : kShapes)
    for (int axis : {1, 0})
      if ((axis == 1 ? s.in : s.out) % 256 == 0)
        for (int k : {2, 3, 4}) v.emplace_back(s, axis, k);
  return v;
}

// Every form that supports (g, M) for M = 1..8 against the fp64 reference.
void check_linear_forms(const TrellisGeometry& g, const Shape& shape, const char* suite) {
  auto rng = fresh_rng(suite);
  RandomTrellis w(g, rng);
  cuda::Context ctx;
  const int max_m = 8;
  DeviceBf16 x(size_t(max_m * shape.in));
  DeviceBf16 y(size_t(max_m * shape.out));
  x.randomize(rng);
  const auto ref = reference_linear(w.host(), x.host, max_m);
  for (const auto& [form, mode] : forms_for(int(g.axis))) {
    for (int M = 1; M <= max_m; ++M) {
      if (!cuda::form_supports(form, g, M, mode)) continue;
      y.poison();
      cuda::linear(ctx, w.device(), x.dev, M, y.dev, form, mode);
      TRELLIS_CUDA_OK(cudaDeviceSynchronize());
      y.download();
      // ref rows are [m][out] for all 8 rows; the first M rows are this call's.
      const double err = relative_error(y.host, ref, size_t(M * shape.out));
      EXPECT_LE(err, bound(mode)) << cuda::to_string(form) << " " << to_string(mode) << " M=" << M << " L=" << g.L;
    }
  }
}

TEST_P(LinearForms, MatchFp64Reference) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  const auto [shape, axis, k] = GetParam();
  check_linear_forms(make_geometry(k, 12, 256, axis, shape.out, shape.in), shape, "LinearForms");
}

// The window extraction's masks and multipliers depend on L (run_decode.cuh):
// the narrowest state (L = k + 1) and the widest (L = 16, QTIP's) on the small shapes.
TEST(StateWidths, NarrowestAndWidestMatchFp64Reference) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  for (const Shape s : {Shape{264, 768}, Shape{768, 264}})
    for (int k : {2, 3, 4})
      for (int L : {k + 1, 16}) check_linear_forms(make_geometry(k, L, 256, s.in % 256 == 0 ? 1 : 0, s.out, s.in), s, "StateWidths");
}

// The CUDA-core forms serve any T that is a multiple of 32 (run_decode.cuh's
// block-run loads: the run at t0 = 0 wraps, vectors at k = 2 and 4 stay
// aligned); the tensor-core forms take only T = 256 and are skipped here.
TEST(BlockSizes, CudaCoreFormsMatchFp64Reference) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  for (const Shape s : {Shape{264, 768}, Shape{768, 264}})
    for (int k : {2, 3, 4})
      for (int T : {32, 64, 128})
        check_linear_forms(make_geometry(k, 12, T, s.in % T == 0 ? 1 : 0, s.out, s.in), s, "BlockSizes");
}

std::string linear_name(const ::testing::TestParamInfo<std::tuple<Shape, int, int>>& info) {
  const auto [s, axis, k] = info.param;
  return std::to_string(s.out) + "x" + std::to_string(s.in) + "_axis" + std::to_string(axis) + "_k" + std::to_string(k);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearForms, ::testing::ValuesIn(linear_cases()), linear_name);

// k = 3 axis-0 codes stored block-pair interleaved give the row-major result.
TEST(K3Interleaved, SameOutputAsRowMajor) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("K3Interleaved");
  for (const Shape s : {Shape{5120, 17408}, Shape{1024, 768}}) {
    const TrellisGeometry g = make_geometry(3, 12, 256, 0, s.out, s.in);
    RandomTrellis w(g, rng);
    TrellisGeometry gi = g;
    gi.block_interleave = 2;
    RandomTrellis wi(gi, rng);
    wi.codes = interleave_k3(g, w.codes);
    wi.scales = w.scales;
    cudaMemcpy(wi.d_codes, wi.codes.data(), wi.codes.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(wi.d_scales, wi.scales.data(), wi.scales.size() * 2, cudaMemcpyHostToDevice);
    cuda::Context ctx;
    DeviceBf16 x(size_t(8 * s.in)), y(size_t(8 * s.out)), yi(size_t(8 * s.out));
    x.randomize(rng);
    const auto ref = reference_linear(wi.host(), x.host, 8);
    for (const auto& [form, mode] : forms_for(0)) {
      for (int M : {1, 4, 8}) {
        if (!cuda::form_supports(form, gi, M, mode)) continue;
        y.poison();
        yi.poison();
        cuda::linear(ctx, w.device(), x.dev, M, y.dev, form, mode);
        cuda::linear(ctx, wi.device(), x.dev, M, yi.dev, form, mode);
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        y.download();
        yi.download();
        EXPECT_EQ(y.host, yi.host) << cuda::to_string(form) << " M=" << M;
        EXPECT_LE(relative_error(yi.host, ref, size_t(M * s.out)), bound(mode)) << cuda::to_string(form);
      }
    }
  }
}

// A group of projections reading the same x (q, k, v of different rows):
// linear_group's stacked reduce launch gives every output bit for bit as its
// own linear() call, within the bound of the fp64 reference; a group of mixed
// forms (reduce and mma) runs call by call, the same.
TEST(LinearGroup, StackedReduceEqualsSeparateCalls) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("LinearGroup");
  const int64_t in = 5120;
  const int64_t rows[] = {5120, 1024, 1024};
  for (int k : {2, 3, 4}) {
    std::deque<RandomTrellis> w;  // neither copyable nor movable
    for (const int64_t r : rows) w.emplace_back(make_geometry(k, 12, 256, 1, r, in), rng);
    cuda::Context ctx;
    DeviceBf16 x(size_t(4 * in));
    x.randomize(rng);
    std::deque<DeviceBf16> grouped, alone;
    for (const int64_t r : rows) {
      grouped.emplace_back(size_t(4 * r));
      alone.emplace_back(size_t(4 * r));
    }
    for (int M = 1; M <= 4; ++M) {
      for (const bool mixed : {false, true}) {
        std::vector<TrellisTensorView> views;
        std::vector<cuda::LinearCall> calls;
        for (size_t i = 0; i < w.size(); ++i) views.push_back(w[i].device());
        for (size_t i = 0; i < w.size(); ++i) {
          const Form f = mixed && i == 1 ? Form::mma : Form::reduce;
          const Numerics mode = f == Form::mma ? Numerics::factored : Numerics::f32;
          grouped[i].poison();
          alone[i].poison();
          calls.push_back({&views[i], grouped[i].dev, f, mode});
          cuda::linear(ctx, views[i], x.dev, M, alone[i].dev, f, mode);
        }
        cuda::linear_group(ctx, calls.data(), int(calls.size()), x.dev, M);
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        for (size_t i = 0; i < w.size(); ++i) {
          grouped[i].download();
          alone[i].download();
          const size_t n = size_t(M * rows[i]);
          EXPECT_TRUE(std::equal(grouped[i].host.begin(), grouped[i].host.begin() + n, alone[i].host.begin()))
              << "k=" << k << " M=" << M << " part " << i << (mixed ? " (mixed forms)" : "");
          const auto ref = reference_linear(w[i].host(), x.host, M);
          EXPECT_LE(relative_error(grouped[i].host, ref, n), bound(calls[i].mode)) << "k=" << k << " M=" << M;
        }
      }
    }
  }
}

// fp64 silu(g)·u from fp64 projections.
std::vector<double> reference_swiglu(const std::vector<double>& g, const std::vector<double>& u) {
  std::vector<double> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) out[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return out;
}

class GateUpForms : public ::testing::TestWithParam<std::tuple<Shape, std::pair<int, int>>> {};

TEST_P(GateUpForms, MatchReferenceAndSplitTailIsBitIdentical) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  const auto [shape, ks] = GetParam();
  auto rng = fresh_rng("GateUpForms");
  RandomTrellis gate(make_geometry(ks.first, 12, 256, 1, shape.out, shape.in), rng);
  RandomTrellis up(make_geometry(ks.second, 12, 256, 1, shape.out, shape.in), rng);
  cuda::Context ctx;
  DeviceBf16 x(size_t(8 * shape.in)), out(size_t(8 * shape.out));
  DeviceBf16 g1(size_t(8 * shape.out)), u1(size_t(8 * shape.out)), unfused(size_t(8 * shape.out));
  x.randomize(rng);
  const auto ref = reference_swiglu(reference_linear(gate.host(), x.host, 8), reference_linear(up.host(), x.host, 8));
  // (fused form, its numerics, the one-projection form that must round identically)
  const std::tuple<Form, Numerics, Form> cases[] = {
      {Form::mma, Numerics::factored, Form::mma},
      {Form::imma, Numerics::factored, Form::imma},
      {Form::gate_up, Numerics::f32, Form::reduce},
      {Form::gate_up, Numerics::factored, Form::reduce},
      {Form::gate_up, Numerics::rounded, Form::reduce},
      {Form::expand_cublas, Numerics::rounded, Form::expand_cublas}};
  for (const auto& [form, mode, single] : cases) {
    for (int M = 1; M <= 8; ++M) {
      if (!cuda::form_supports(form, gate.geom, M, mode)) continue;
      for (SwigluTail tail : {SwigluTail::split, SwigluTail::fused}) {
        if (form == Form::expand_cublas && tail == SwigluTail::fused) continue;
        out.poison();
        cuda::gate_up_swiglu(ctx, gate.device(), up.device(), x.dev, M, out.dev, form, mode, tail);
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        out.download();
        EXPECT_LE(relative_error(out.host, ref, size_t(M * shape.out)), 1.5e-2)
            << cuda::to_string(form) << " " << to_string(mode) << " " << to_string(tail) << " M=" << M;
        if (tail != SwigluTail::split || !cuda::form_supports(single, gate.geom, M, mode)) continue;
        g1.poison();
        u1.poison();
        unfused.poison();
        cuda::linear(ctx, gate.device(), x.dev, M, g1.dev, single, mode);
        cuda::linear(ctx, up.device(), x.dev, M, u1.dev, single, mode);
        cuda::swiglu(ctx, g1.dev, u1.dev, unfused.dev, size_t(M * shape.out));
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        unfused.download();
        EXPECT_TRUE(std::equal(out.host.begin(), out.host.begin() + M * shape.out, unfused.host.begin()))
            << "split tail not bit-identical to two " << cuda::to_string(single) << " projections + swiglu, M=" << M;
      }
    }
  }
}

std::string gate_up_name(const ::testing::TestParamInfo<std::tuple<Shape, std::pair<int, int>>>& info) {
  const auto [s, ks] = info.param;
  return std::to_string(s.out) + "x" + std::to_string(s.in) + "_k" + std::to_string(ks.first) + std::to_string(ks.second);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GateUpForms,
                         ::testing::Combine(::testing::Values(Shape{17408, 5120}, Shape{1024, 5120}, Shape{264, 768}),
                                            ::testing::Values(std::pair{2, 2}, std::pair{3, 3}, std::pair{4, 4},
                                                              std::pair{2, 4}, std::pair{4, 3})),
                         gate_up_name);

// imma carries x as 15-bit fixed point scaled to each row's (axis 1) or
// segment's (axis 0) largest |x|: an outlier 100x the rms coarsens every other
// element's step to ≈ 100·rms/32639, which must stay inside the factored bound.
TEST(ImmaNumerics, OutlierActivationsStayWithinTheFactoredBound) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("ImmaOutliers");
  cuda::Context ctx;
  for (int axis : {1, 0}) {
    const TrellisGeometry g = make_geometry(3, 12, 256, axis, 5120, 5120);
    RandomTrellis w(g, rng);
    const int M = 4;
    DeviceBf16 x(size_t(M * 5120)), y(size_t(M * 5120));
    x.randomize(rng);
    for (int m = 0; m < M; ++m) x.host[size_t(m) * 5120 + size_t(97 * (m + 1))] = float_to_bf16(m % 2 ? -100.0f : 100.0f);
    x.upload();
    const auto ref = reference_linear(w.host(), x.host, M);
    y.poison();
    cuda::linear(ctx, w.device(), x.dev, M, y.dev, Form::imma, Numerics::factored);
    TRELLIS_CUDA_OK(cudaDeviceSynchronize());
    y.download();
    EXPECT_LE(relative_error(y.host, ref, size_t(M * 5120)), bound(Numerics::factored)) << "axis " << axis;
  }
}

// A NaN in one activation row makes that row's outputs NaN (the fixed-point
// staging must not turn it into a number) and leaves the other rows exact.
TEST(ImmaNumerics, NanRowGivesNanOutputsOnlyThere) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("ImmaNan");
  cuda::Context ctx;
  const TrellisGeometry g = make_geometry(2, 12, 256, 1, 1024, 5120);
  RandomTrellis w(g, rng);
  const int M = 2;
  DeviceBf16 x(size_t(M * 5120)), y(size_t(M * 1024));
  x.randomize(rng);
  const auto ref = reference_linear(w.host(), x.host, M);
  x.host[1234] = 0x7fc0;  // row 0: a quiet NaN
  x.upload();
  y.poison();
  cuda::linear(ctx, w.device(), x.dev, M, y.dev, Form::imma, Numerics::factored);
  TRELLIS_CUDA_OK(cudaDeviceSynchronize());
  y.download();
  EXPECT_TRUE(std::all_of(y.host.begin(), y.host.begin() + 1024, [](uint16_t v) { return std::isnan(bf16_to_float(v)); }));
  const std::vector<uint16_t> row1(y.host.begin() + 1024, y.host.end());
  const std::vector<double> ref1(ref.begin() + 1024, ref.end());
  EXPECT_LE(relative_error(row1, ref1, 1024), bound(Numerics::factored));
}

TEST(FormSelection, DefaultsAndRejections) {
  const TrellisGeometry g = make_geometry(3, 12, 256, 1, 17408, 5120);
  EXPECT_EQ(cuda::default_form(g, 1), Form::imma);
  EXPECT_EQ(cuda::default_form(g, 4), Form::imma);
  EXPECT_EQ(cuda::default_form(g, 5), Form::mma);
  EXPECT_EQ(cuda::default_form(g, 8), Form::mma);
  EXPECT_EQ(cuda::default_form(g, 9), Form::expand_cublas);
  EXPECT_EQ(cuda::default_gate_up_form(g, g, 1), Form::imma);
  EXPECT_EQ(cuda::default_gate_up_form(g, g, 8), Form::mma);
  // imma: M <= 4; axis 1 with 2M operand rows of cols + 16 words in the staging budget, cols <= 16384.
  EXPECT_TRUE(cuda::form_supports(Form::imma, make_geometry(3, 12, 256, 0, 5120, 17408), 4, Numerics::factored));
  EXPECT_FALSE(cuda::form_supports(Form::imma, make_geometry(3, 12, 256, 0, 5120, 17408), 5, Numerics::factored));
  EXPECT_FALSE(cuda::form_supports(Form::imma, make_geometry(3, 12, 256, 1, 1024, 16640), 1, Numerics::factored));
  EXPECT_FALSE(cuda::form_supports(Form::imma, make_geometry(3, 12, 256, 1, 1024, 8192), 4, Numerics::factored));
  EXPECT_TRUE(cuda::form_supports(Form::imma, make_geometry(3, 12, 256, 1, 1024, 8192), 2, Numerics::factored));
  EXPECT_FALSE(cuda::form_supports(Form::imma, g, 1, Numerics::f32));
  // Small axis-1 matrices at small M take the CUDA-core forms (measured faster).
  const TrellisGeometry kv = make_geometry(3, 12, 256, 1, 1024, 5120), qo = make_geometry(3, 12, 256, 1, 5120, 5120);
  EXPECT_EQ(cuda::default_form(kv, 4), Form::reduce);
  EXPECT_EQ(cuda::default_form(kv, 8), Form::mma);
  EXPECT_EQ(cuda::default_form(qo, 2), Form::reduce);
  EXPECT_EQ(cuda::default_form(qo, 4), Form::imma);
  EXPECT_EQ(cuda::default_gate_up_form(kv, kv, 1), Form::gate_up);
  EXPECT_EQ(cuda::default_numerics(Form::reduce), Numerics::factored);
  EXPECT_EQ(cuda::default_numerics(Form::gate_up), Numerics::factored);
  EXPECT_EQ(cuda::default_numerics(Form::expand_cublas), Numerics::rounded);
  EXPECT_FALSE(cuda::form_supports(Form::mma, g, 1, Numerics::f32));
  EXPECT_FALSE(cuda::form_supports(Form::scatter, g, 1, Numerics::f32));
  EXPECT_FALSE(cuda::form_supports(Form::reduce, g, 5, Numerics::f32));
}

}  // namespace
}  // namespace trellis::test
