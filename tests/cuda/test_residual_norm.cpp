// The residual RMSNorm split across launches (trellis_ops.hpp:
// ResidualNormWrite, NormScale), at M = 1, against independent references:
//   producer  (reduce at axis 1; imma and mma at axis 0): x' = x + bf16(y)
//             and image = bf16(x' ⊙ w) bit for bit, with y the same form's
//             unfused output (the producer must round exactly as it does),
//             and Σ partials = Σ x'² (fp64, to 1e-12 relative);
//   reader    (reduce stacked as q/k/v, gate_up, the unfused reduce pair,
//             imma one projection and gate/up on both axis-1 kernels): outputs within the unfused
//             bounds of s·(the fp64 reference), where s comes from random
//             partials chosen so that s ≈ 0.3 (an ignored scale fails by 3x);
//   and the calls no form can serve are refused with an error.
// Fresh random inputs each run (seed printed); outputs poisoned before each launch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"
#include "trellis_fixture.hpp"

namespace trellis::test {
namespace {

using cuda::Form;

// A device array of T with a host mirror.
template <typename T>
struct DeviceArray {
  std::vector<T> host;
  T* dev = nullptr;
  explicit DeviceArray(size_t n) : host(n) { cudaMalloc(&dev, n * sizeof(T)); }
  ~DeviceArray() { cudaFree(dev); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload() { cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice); }
  void download() { cudaMemcpy(host.data(), dev, host.size() * sizeof(T), cudaMemcpyDeviceToHost); }
  void poison() { cudaMemset(dev, 0xff, host.size() * sizeof(T)); }
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct ProducerCase {
  Form form;
  Numerics mode;
  int axis;
  int64_t out, in;
};

TEST(ResidualNormProducer, AddsImagesAndSumsAsTheUnfusedOutputDoes) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("ResidualNormProducer");
  cuda::Context ctx;
  const ProducerCase cases[] = {
      {Form::reduce, Numerics::f32, 1, 5120, 5120},     {Form::reduce, Numerics::factored, 1, 264, 768},
      {Form::reduce, Numerics::rounded, 1, 1024, 5120}, {Form::imma, Numerics::factored, 0, 5120, 17408},
      {Form::imma, Numerics::factored, 0, 768, 264},    {Form::mma, Numerics::factored, 0, 5120, 1024}};
  for (const ProducerCase& c : cases) {
    for (int k : {2, 3, 4}) {
      const TrellisGeometry g = make_geometry(k, 12, 256, c.axis, c.out, c.in);
      ASSERT_TRUE(cuda::writes_residual_norm(c.form, g, 1)) << cuda::to_string(c.form);
      RandomTrellis w(g, rng);
      DeviceBf16 x(size_t(c.in)), y(size_t(c.out)), image(size_t(c.out));
      x.randomize(rng);
      y.poison();
      cuda::linear(ctx, w.device(), x.dev, 1, y.dev, c.form, c.mode);
      const int parts = cuda::residual_norm_partials(c.form, g, ctx.sm_count());
      ASSERT_GE(parts, 1);
      DeviceArray<float> residual(size_t(c.out)), norm_w(size_t(c.out));
      DeviceArray<double> partials(static_cast<size_t>(parts));
      std::normal_distribution<float> d(0.0f, 4.0f), dw(1.0f, 0.2f);
      for (auto& v : residual.host) v = d(rng);
      for (auto& v : norm_w.host) v = dw(rng);
      const std::vector<float> before = residual.host;
      residual.upload();
      norm_w.upload();
      partials.poison();
      image.poison();
      cuda::linear(ctx, w.device(), x.dev, 1, nullptr, c.form, c.mode,
                   {residual.dev, norm_w.dev, image.dev, partials.dev});
      TRELLIS_CUDA_OK(cudaDeviceSynchronize());
      y.download();
      residual.download();
      image.download();
      partials.download();
      int wrong_x = 0, wrong_image = 0;
      double want_sum = 0;
      for (int64_t i = 0; i < c.out; ++i) {
        const float xi = before[size_t(i)] + bf16_to_float(y.host[size_t(i)]);
        wrong_x += bits(residual.host[size_t(i)]) != bits(xi);
        wrong_image += image.host[size_t(i)] != float_to_bf16(xi * norm_w.host[size_t(i)]);
        want_sum += double(xi) * double(xi);
      }
      const double got_sum = std::accumulate(partials.host.begin(), partials.host.end(), 0.0);
      const std::string what = std::string(cuda::to_string(c.form)) + " " + to_string(c.mode) + " axis " +
                               std::to_string(c.axis) + " " + std::to_string(c.out) + "x" + std::to_string(c.in) +
                               " k=" + std::to_string(k);
      EXPECT_EQ(wrong_x, 0) << what << ": residual elements that differ from x + bf16(y)";
      EXPECT_EQ(wrong_image, 0) << what << ": image elements that differ from bf16(x' * w)";
      EXPECT_NEAR(got_sum, want_sum, 1e-12 * want_sum) << what << " (" << parts << " partials)";
    }
  }
}

// Partials whose sum gives s = 1/√(Σ/n + eps) ≈ 0.316 for a row of n.
struct Scale {
  std::vector<double> host;
  double s = 0;
  Scale(int count, int n, float eps, std::mt19937_64& rng) : host(size_t(count)) {
    std::uniform_real_distribution<double> d(0.5, 1.5);
    double total = 0;
    for (auto& v : host) total += (v = d(rng));
    const double want = 10.0 * n;  // Σ/n = 10
    for (auto& v : host) v *= want / total;
    total = std::accumulate(host.begin(), host.end(), 0.0);
    s = double(float(1.0 / std::sqrt(total / n + double(eps))));
  }
};

std::vector<double> scaled(std::vector<double> v, double s) {
  for (auto& e : v) e *= s;
  return v;
}

std::vector<double> reference_swiglu(const std::vector<double>& g, const std::vector<double>& u) {
  std::vector<double> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) out[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return out;
}

TEST(NormScaleReader, StackedReduceScalesEveryPart) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("NormScaleStacked");
  cuda::Context ctx;
  for (const int64_t in : {int64_t(5120), int64_t(768)}) {
    const std::vector<int64_t> rows = in == 5120 ? std::vector<int64_t>{5120, 1024, 1024} : std::vector<int64_t>{264, 512, 256};
    for (int k : {2, 3, 4}) {
      for (const int count : {20, 320}) {
        std::deque<RandomTrellis> w;
        std::vector<TrellisTensorView> views;
        for (const int64_t r : rows) w.emplace_back(make_geometry(k, 12, 256, 1, r, in), rng);
        for (const auto& t : w) views.push_back(t.device());
        DeviceBf16 x(static_cast<size_t>(in));
        x.randomize(rng);
        const Scale sc(count, int(in), 1e-6f, rng);
        DeviceArray<double> partials(static_cast<size_t>(count));
        partials.host = sc.host;
        partials.upload();
        std::deque<DeviceBf16> y;
        std::vector<cuda::LinearCall> calls;
        for (size_t i = 0; i < rows.size(); ++i) {
          y.emplace_back(size_t(rows[i]));
          y.back().poison();
          calls.push_back({&views[i], y.back().dev, Form::reduce, Numerics::f32});
        }
        cuda::linear_group(ctx, calls.data(), int(calls.size()), x.dev, 1, {partials.dev, count, int(in), 1e-6f});
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        for (size_t i = 0; i < rows.size(); ++i) {
          y[i].download();
          const auto ref = scaled(reference_linear(w[i].host(), x.host, 1), sc.s);
          EXPECT_LE(relative_error(y[i].host, ref, size_t(rows[i])), 4e-3)
              << in << " cols, part " << i << " k=" << k << " partials " << count;
        }
      }
    }
  }
}

TEST(NormScaleReader, ImmaAndCudaCoreGateUpScaleBeforeSwiglu) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("NormScaleGateUp");
  cuda::Context ctx;
  struct Case {
    int64_t out, in;
    int kg, ku;
  };
  // imma at M = 1: gate k = 3 runs the mma.sync kernel, the others the warpgroup kernel where there is one.
  const Case cases[] = {{17408, 5120, 3, 3}, {17408, 5120, 2, 4}, {1024, 5120, 4, 3}, {264, 768, 2, 2}};
  for (const Case& c : cases) {
    RandomTrellis gate(make_geometry(c.kg, 12, 256, 1, c.out, c.in), rng);
    RandomTrellis up(make_geometry(c.ku, 12, 256, 1, c.out, c.in), rng);
    DeviceBf16 x(size_t(c.in)), out(size_t(c.out));
    x.randomize(rng);
    const Scale sc(320, int(c.in), 1e-6f, rng);
    DeviceArray<double> partials(sc.host.size());
    partials.host = sc.host;
    partials.upload();
    const auto ref = reference_swiglu(scaled(reference_linear(gate.host(), x.host, 1), sc.s),
                                      scaled(reference_linear(up.host(), x.host, 1), sc.s));
    // reduce: the unfused pair (two scaled projections, then swiglu), split tail only.
    const std::pair<Form, Numerics> forms[] = {
        {Form::imma, Numerics::factored}, {Form::gate_up, Numerics::f32}, {Form::reduce, Numerics::f32}};
    for (const auto& [form, mode] : forms) {
      for (SwigluTail tail : {SwigluTail::split, SwigluTail::fused}) {
        if (form == Form::reduce && tail == SwigluTail::fused) continue;
        out.poison();
        cuda::gate_up_swiglu(ctx, gate.device(), up.device(), x.dev, 1, out.dev, form, mode, tail,
                             {partials.dev, int(partials.host.size()), int(c.in), 1e-6f});
        TRELLIS_CUDA_OK(cudaDeviceSynchronize());
        out.download();
        EXPECT_LE(relative_error(out.host, ref, size_t(c.out)), 1.5e-2)
            << cuda::to_string(form) << " " << to_string(tail) << " " << c.out << "x" << c.in << " k=" << c.kg << "/"
            << c.ku;
      }
    }
  }
}

TEST(NormScaleReader, ImmaOneProjectionScales) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("NormScaleImma");
  cuda::Context ctx;
  for (int k : {2, 3, 4}) {
    for (const int64_t out : {int64_t(5120), int64_t(1024)}) {
      const TrellisGeometry g = make_geometry(k, 12, 256, 1, out, 5120);
      RandomTrellis w(g, rng);
      DeviceBf16 x(5120), y(static_cast<size_t>(out));
      x.randomize(rng);
      const Scale sc(20, 5120, 1e-6f, rng);
      DeviceArray<double> partials(sc.host.size());
      partials.host = sc.host;
      partials.upload();
      y.poison();
      cuda::linear(ctx, w.device(), x.dev, 1, y.dev, Form::imma, Numerics::factored, {},
                   {partials.dev, int(partials.host.size()), 5120, 1e-6f});
      TRELLIS_CUDA_OK(cudaDeviceSynchronize());
      y.download();
      const auto ref = scaled(reference_linear(w.host(), x.host, 1), sc.s);
      EXPECT_LE(relative_error(y.host, ref, size_t(out)), 4e-3) << "k=" << k << " rows " << out;
    }
  }
}

TEST(ResidualNormFusion, CallsNoFormCanServeAreRefused) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  auto rng = fresh_rng("ResidualNormRefusals");
  cuda::Context ctx;
  const TrellisGeometry g1 = make_geometry(3, 12, 256, 1, 1024, 5120), g0 = make_geometry(3, 12, 256, 0, 5120, 1024);
  RandomTrellis w1(g1, rng), w0(g0, rng);
  DeviceBf16 x(size_t(2 * 5120)), y(size_t(2 * 5120));
  DeviceArray<float> residual(5120), norm_w(5120);
  DeviceArray<double> partials(64);
  const cuda::ResidualNormWrite r{residual.dev, norm_w.dev, y.dev, partials.dev};
  const cuda::NormScale s{partials.dev, 20, 5120, 1e-6f};
  EXPECT_FALSE(cuda::writes_residual_norm(Form::imma, g1, 1));
  EXPECT_FALSE(cuda::writes_residual_norm(Form::reduce, g1, 2));
  EXPECT_FALSE(cuda::takes_norm_scale(Form::mma, g1, 1));
  EXPECT_FALSE(cuda::takes_norm_scale(Form::imma, g0, 1));
  EXPECT_TRUE(cuda::takes_norm_scale(Form::imma, g1, 1));
  EXPECT_THROW(cuda::linear(ctx, w1.device(), x.dev, 1, y.dev, Form::imma, Numerics::factored, r), Error);
  EXPECT_THROW(cuda::linear(ctx, w1.device(), x.dev, 2, y.dev, Form::reduce, Numerics::f32, r), Error);
  EXPECT_THROW(cuda::linear(ctx, w1.device(), x.dev, 1, y.dev, Form::mma, Numerics::factored, {}, s), Error);
  EXPECT_THROW(cuda::linear(ctx, w0.device(), x.dev, 1, y.dev, Form::expand_cublas, Numerics::rounded, r), Error);
  EXPECT_THROW(cuda::linear(ctx, w1.device(), x.dev, 1, y.dev, Form::reduce, Numerics::f32, {},
                            cuda::NormScale{partials.dev, 0, 5120, 1e-6f}),
               Error);
  EXPECT_THROW(cuda::gate_up_swiglu(ctx, w1.device(), w1.device(), x.dev, 1, y.dev, Form::mma, Numerics::factored,
                                    SwigluTail::fused, s),
               Error);
  TRELLIS_CUDA_OK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace trellis::test
