// Each CUDA model op against the CPU backend (the reference) on random
// inputs drawn fresh per run: RMSNorm (layer and per-head QK-norm, in
// place), RoPE at a far position, attention (a 1000-token prefill, then
// decode calls of M = 1..8 query rows over the long cache, head_dim 64 and
// 128, GQA), and the Hadamard rotations of the trellis layers (which mirror
// the codec's fp32 butterflies step for step: equal bit for bit).
// Bounds: elementwise ops 1e-6 relative to the row scale (fp32 math in a
// different order); attention 1e-5 absolute on O(1) outputs.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels.hpp"
#include "model_cuda_fixture.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

std::mt19937_64 fresh_rng(const char* test) {
  const uint64_t seed = std::random_device{}();
  std::printf("%s: seed %llu\n", test, (unsigned long long)seed);
  return std::mt19937_64(seed);
}

std::vector<float> normal(std::mt19937_64& rng, size_t n, float sd = 1.0f) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// One activation matrix on both backends, holding the same values.
struct Pair {
  model::ActBuffer cpu, gpu;
  Pair(model::Backend& c, model::Backend& g, int64_t rows, int64_t cols, const std::vector<float>& values)
      : cpu(c.alloc(rows, cols)), gpu(g.alloc(rows, cols)) {
    std::copy(values.begin(), values.end(), static_cast<float*>(cpu.act.data));
    cudaMemcpy(gpu.act.data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
};

std::vector<float> host(model::Backend& b, const model::Act& a) {
  std::vector<float> v(size_t(a.rows * a.cols));
  b.to_host(a, v.data());
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::isfinite(a[i]) ? std::max(m, double(std::fabs(a[i] - b[i]))) : INFINITY;
  return m;
}

struct Backends {
  std::unique_ptr<model::Backend> cpu = model::make_cpu_backend();
  std::unique_ptr<model::Backend> gpu = model::make_cuda_backend();
};

TEST(CudaModelOps, RmsNormLayerAndPerHeadInPlace) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("RmsNorm");
  for (const int64_t n : {int64_t(512), int64_t(128), int64_t(5120)}) {
    const int64_t rows = 5, cols = n == 128 ? 40 * 128 : n;
    const auto w = normal(rng, size_t(n));
    const auto wc = b.cpu->load_vector(w), wg = b.gpu->load_vector(w);
    Pair x(*b.cpu, *b.gpu, rows, cols, normal(rng, size_t(rows * cols), 3.0f));
    b.cpu->rmsnorm(x.cpu.act, *wc, 1e-6f, x.cpu.act);
    b.gpu->rmsnorm(x.gpu.act, *wg, 1e-6f, x.gpu.act);
    const double d = max_abs_diff(host(*b.gpu, x.gpu.act), host(*b.cpu, x.cpu.act));
    std::printf("rmsnorm n=%lld: max |d| = %.3g\n", (long long)n, d);
    EXPECT_LE(d, 1e-5);
  }
}

TEST(CudaModelOps, RopeAtAFarPosition) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("Rope");
  for (const int64_t d : {int64_t(64), int64_t(128)}) {
    std::vector<float> f(size_t(d / 2));
    for (size_t i = 0; i < f.size(); ++i) f[i] = float(1.0 / std::pow(1e6, 2.0 * double(i) / double(d)));
    const auto fc = b.cpu->load_vector(f), fg = b.gpu->load_vector(f);
    const int64_t rows = 7, cols = 8 * d;
    Pair x(*b.cpu, *b.gpu, rows, cols, normal(rng, size_t(rows * cols)));
    b.cpu->rope(x.cpu.act, *fc, 3001);
    b.gpu->rope(x.gpu.act, *fg, 3001);
    const double diff = max_abs_diff(host(*b.gpu, x.gpu.act), host(*b.cpu, x.cpu.act));
    std::printf("rope d=%lld at 3001: max |d| = %.3g\n", (long long)d, diff);
    EXPECT_LE(diff, 1e-6);
  }
}

TEST(CudaModelOps, AttentionPrefillThenDecodeOverALongCache) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("Attention");
  for (const int64_t d : {int64_t(64), int64_t(128)}) {
    const int64_t heads = 8, kv_heads = 2, prefill = 1000, capacity = prefill + 36;
    auto cc = b.cpu->make_kv_cache(1, kv_heads, d, capacity);
    auto cg = b.gpu->make_kv_cache(1, kv_heads, d, capacity);
    int64_t pos = 0;
    for (const int64_t M : {prefill, int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5), int64_t(6),
                            int64_t(7), int64_t(8)}) {
      Pair q(*b.cpu, *b.gpu, M, heads * d, normal(rng, size_t(M * heads * d)));
      Pair k(*b.cpu, *b.gpu, M, kv_heads * d, normal(rng, size_t(M * kv_heads * d)));
      Pair v(*b.cpu, *b.gpu, M, kv_heads * d, normal(rng, size_t(M * kv_heads * d)));
      Pair out(*b.cpu, *b.gpu, M, heads * d, std::vector<float>(size_t(M * heads * d), NAN));
      b.cpu->attention(q.cpu.act, k.cpu.act, v.cpu.act, *cc, 0, pos, out.cpu.act);
      b.gpu->attention(q.gpu.act, k.gpu.act, v.gpu.act, *cg, 0, pos, out.gpu.act);
      const double diff = max_abs_diff(host(*b.gpu, out.gpu.act), host(*b.cpu, out.cpu.act));
      std::printf("attention d=%lld M=%lld at %lld: max |d| = %.3g\n", (long long)d, (long long)M, (long long)pos,
                  diff);
      EXPECT_LE(diff, 1e-5) << "d=" << d << " M=" << M;
      pos += M;
    }
  }
}

TEST(CudaModelOps, HadamardRotationsMatchTheCodec) {
  TRELLIS_REQUIRE_GPU();
  auto rng = fresh_rng("Hadamard");
  const int64_t rows = 3, cols = 1024;
  const int T = 256;
  const auto x = normal(rng, size_t(rows * cols));
  const auto signs = random_signs(cols, rng());
  float *dx = nullptr, *dout = nullptr;
  uint16_t* dy = nullptr;
  int8_t* ds = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, x.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ds, signs.size()), cudaSuccess);
  cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(ds, signs.data(), signs.size(), cudaMemcpyHostToDevice);

  // Axis 1, input side: bf16(H (s ⊙ x)).
  model::cuda::launch_rotate_to_bf16(dx, ds, rows, cols, T, dy, nullptr);
  std::vector<uint16_t> y(x.size());
  cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
  std::vector<float> ref = x;
  rotate_rows(ref.data(), rows, cols, signs.data(), T);
  size_t rotate_mismatch = 0;
  for (size_t i = 0; i < y.size(); ++i) rotate_mismatch += y[i] != float_to_bf16(ref[i]);
  EXPECT_EQ(rotate_mismatch, 0u);

  // Axis 0, output side: s ⊙ (H float(y)).
  model::cuda::launch_unrotate_to_f32(dy, ds, rows, cols, T, dout, nullptr);
  std::vector<float> out(x.size());
  cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
  std::vector<float> ref0(y.size());
  for (size_t i = 0; i < y.size(); ++i) ref0[i] = bf16_to_float(y[i]);
  unrotate_rows(ref0.data(), rows, cols, signs.data(), T);
  size_t unrotate_mismatch = 0;
  for (size_t i = 0; i < out.size(); ++i) unrotate_mismatch += out[i] != ref0[i];
  EXPECT_EQ(unrotate_mismatch, 0u);
  // And the round trip recovers x to bf16 accuracy.
  EXPECT_LE(max_abs_diff(out, x), 0.05);
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(dy);
  cudaFree(ds);
}

}  // namespace
}  // namespace trellis
