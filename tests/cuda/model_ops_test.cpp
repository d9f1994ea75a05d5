// Each CUDA model op against the CPU backend (the reference) on random
// inputs drawn fresh per run: greedy argmax (against model::argmax), the
// largest logits (against model::largest_logits), the sampling choice from
// them (against model::sample_top, token for token), RMSNorm
// (layer and per-head QK-norm, in place), RoPE at a far position, attention (a 2100-token prefill, then
// decode calls of M = 1..8 query rows over the long cache, head_dim 64 and
// 128, GQA with 4 and 5 query heads per kv head; 67 key tiles, so a decode
// call's split count passes the 64 splits whose outputs attention_combine
// holds in registers), and the Hadamard rotations of the trellis layers (which mirror
// the codec's fp32 butterflies step for step: equal bit for bit).
// Bounds: elementwise ops 1e-6 relative to the row scale (fp32 math in a
// different order); attention 1e-5 absolute on O(1) outputs.
//
// The fused ops (backend.hpp) against their compositions:
//   add_rmsnorm   vs the CPU's add then rmsnorm: x equal bit for bit, out
//                 1e-5 absolute (the rmsnorm bound)
//   qk_norm_rope  (the kernel, fp32 in place and bf16 in with v) vs the CPU's
//                 per-head rmsnorm then rope: 1e-5 absolute on O(1) heads
//   qkv_rope, mlp on layer 0 of the shipped models at M = 1, 5, 40 (the
//                 trellis forms of decode, speculation and prefill), each vs
//                 the same backend's composition (Backend's default) and vs
//                 the CPU's: the 3-bit model takes the fused paths (one bf16
//                 input for q, k, v; the gate/up output read by down in bf16),
//                 which must equal the CUDA composition (v and the MLP bit for
//                 bit: the same kernels on the same bf16 values; q and k to
//                 1e-5, the norm's fp64 sum in another order); the bf16
//                 fixture takes the unfused paths (dense layers). Against the
//                 CPU: dense 1e-4 of the largest |value| (fp32-accurate dense
//                 layers on both); trellis 2^-6 of it (CUDA rounds each
//                 kernel's output to bf16, 2^-9 relative).
//   a layer's residual ops in the forward's order (rmsnorm, qkv_rope,
//                 linear_add_rmsnorm, mlp_add_rmsnorm) after reserve(), as
//                 fused and as composed, at M = 1, 5, 40: on the 3-bit model
//                 the norms read the layers' bf16 outputs (down's un-rotated
//                 in the norm) and hand q/k/v and gate/up their rotated bf16
//                 input, which must equal the conversion kernels' bit for bit:
//                 the residual x, the norm output h and v equal, q and k to
//                 1e-5 (qkv_rope's fused norm); against the CPU as above.
//                 Again with attention before o, on the 3-bit model and on a
//                 copy whose o projections have no rotation, where o reads
//                 attention's bf16 image: x and h equal the composition's.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include "kernels.hpp"
#include "model_cuda_fixture.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/format/safetensors_writer.hpp"
#include "trellis/format/tensor_store.hpp"
#include "trellis/half.hpp"
#include "trellis/model/sampling.hpp"
#include "trellis/model/weights.hpp"

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

// Greedy sampling on the GPU gives model::argmax's answer (first of the
// largest; NaNs skipped, a NaN at 0 answers 0; nothing above −inf answers 0)
// on random rows, a vocabulary's length, ties, NaNs and infinities.
TEST(CudaModelOps, ArgmaxIsTheHostArgmax) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("Argmax");
  std::vector<std::vector<float>> rows;
  for (const size_t n : {size_t(1), size_t(2), size_t(7), size_t(1000), size_t(151936), size_t(300001)}) {
    auto v = normal(rng, n);
    rows.push_back(v);
    std::uniform_int_distribution<size_t> at(0, n - 1);
    for (size_t i = 0; i < n / 50 + 1; ++i) v[at(rng)] = NAN;  // NaNs
    rows.push_back(v);
    for (size_t i = 0; i < n / 100 + 2; ++i) v[at(rng)] = 4.0f;  // a tied maximum, several times
    rows.push_back(v);
    v[at(rng)] = INFINITY;
    v[at(rng)] = -INFINITY;
    rows.push_back(v);
    v[0] = NAN;  // a NaN in front is the answer
    rows.push_back(v);
    rows.push_back(std::vector<float>(n, -INFINITY));
    std::vector<float> nans(n, NAN);
    nans[0] = -INFINITY;
    rows.push_back(nans);
  }
  for (const auto& v : rows) {
    model::ActBuffer x = b.gpu->alloc(1, int64_t(v.size()));
    cudaMemcpy(x.act.data, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
    const int32_t want = model::argmax(v), got = b.gpu->argmax(x.act);
    EXPECT_EQ(got, want) << "row of " << v.size();
  }
}

// The largest logits found on the GPU are largest_logits' (value descending,
// then id; nothing for a row with a NaN) on random rows of several lengths
// (one 4096-value block, partial blocks, a vocabulary's length), with ties,
// infinities and zeros of both signs, for counts from 1 to the most served;
// rows and counts it does not serve come from the host (the default).
TEST(CudaModelOps, TopLogitsAreTheLargestLogits) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("TopLogits");
  for (const size_t n : {size_t(65), size_t(4096), size_t(4097), size_t(151936), size_t(262144), size_t(300001)}) {
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<float> v = normal(rng, n);
      std::uniform_int_distribution<size_t> at(0, n - 1);
      if (variant >= 1)
        for (size_t i = 0; i < n / 20 + 5; ++i) v[at(rng)] = float(int(at(rng) % 7)) * 0.5f;  // many ties at the top
      if (variant >= 2) {
        v[at(rng)] = INFINITY, v[at(rng)] = -INFINITY, v[at(rng)] = -0.0f, v[at(rng)] = 0.0f;
        for (size_t i = 0; i < 40; ++i) v[at(rng)] = -0.0f;
      }
      if (variant == 3) v[at(rng)] = NAN;
      model::ActBuffer x = b.gpu->alloc(1, int64_t(n));
      cudaMemcpy(x.act.data, v.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      for (const int count : {1, 9, 48, 64, 65}) {
        const auto want = model::largest_logits(v, size_t(count));
        const auto got = b.gpu->top_logits(x.act, count);
        ASSERT_EQ(got.size(), want.size()) << "n " << n << ", variant " << variant << ", count " << count;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i].id, want[i].id) << "n " << n << ", variant " << variant << ", count " << count << ", entry " << i;
          ASSERT_EQ(got[i].logit, want[i].logit) << "n " << n << ", entry " << i;
        }
      }
    }
  }
}

// The choice kernel (Backend::choose_to_next) picks the host's token
// (model::sample_top on largest_logits) for the same row, parameters and
// draw, and declines where the host declines (a NaN in the row, no more
// than top_k entries). Draws at the host's cumulative sums themselves (the
// points where a last-place difference in a probability would change the
// token) and at random.
TEST(CudaModelOps, ChoiceOnTheDeviceIsTheHostChoice) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("TopChoice");
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int compared = 0, declined = 0;
  for (const size_t n : {size_t(4097), size_t(151936)}) {
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<float> v = normal(rng, n, variant % 2 ? 1.0f : 4.0f);
      std::uniform_int_distribution<size_t> at(0, n - 1);
      if (variant >= 2)
        for (size_t i = 0; i < 60; ++i) v[at(rng)] = 8.0f + float(int(at(rng) % 5)) * 0.25f;  // ties at the top
      if (variant == 5) v[at(rng)] = NAN;
      model::ActBuffer x = b.gpu->alloc(1, int64_t(n));
      cudaMemcpy(x.act.data, v.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      for (int trial = 0; trial < 6; ++trial) {
        model::SamplingParams sp;
        sp.temperature = trial % 3 == 0 ? 0.7f : trial % 3 == 1 ? 1.0f : 2.0f;
        sp.top_k = 1 + int(at(rng) % model::Sampler::kMaxTopK);
        sp.top_p = trial % 2 ? 0.95f : 1.0f;
        sp.min_p = trial % 4 < 2 ? 0.05f : 0.0f;
        const model::TopChoiceParams params = model::top_choice_params(sp);
        for (const bool short_count : {false, true}) {
          const int count = short_count ? sp.top_k : sp.top_k + model::Sampler::kTopMargin;
          const auto largest = model::largest_logits(v, size_t(count));
          std::vector<double> draws = {0.0, uniform(rng), uniform(rng), 0x1.fffffffffffffp-1};
          if (auto c = model::top_k_candidates(largest, sp.temperature, sp.top_k)) {
            model::keep_top_p(*c, sp.top_p);
            model::keep_min_p(*c, sp.min_p);
            double cumulative = 0;
            for (const auto& e : *c) draws.push_back(cumulative += e.prob);
          }
          for (const double u : draws) {
            const std::optional<int32_t> want = model::sample_top(sp, largest, u);
            b.gpu->choose_to_next(x.act, count, params, u);
            const int32_t got = b.gpu->take_token();
            ASSERT_EQ(got, want ? *want : model::Backend::kDeclined)
                << "n " << n << ", variant " << variant << ", trial " << trial << ", count " << count << ", u "
                << u;
            ++(want ? compared : declined);
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 500);
  EXPECT_GT(declined, 50);
}

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
  // 4 query heads per kv head (two per 8-row block), and 5 (Qwen3-14B's; blocks straddle query positions).
  for (const auto& [d, heads, kv_heads] : {std::array<int64_t, 3>{64, 8, 2}, std::array<int64_t, 3>{128, 8, 2},
                                           std::array<int64_t, 3>{128, 10, 2}}) {
    const int64_t prefill = 2100, capacity = prefill + 36;
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
      std::printf("attention d=%lld heads=%lld/%lld M=%lld at %lld: max |d| = %.3g\n", (long long)d,
                  (long long)heads, (long long)kv_heads, (long long)M, (long long)pos, diff);
      EXPECT_LE(diff, 1e-5) << "d=" << d << " heads=" << heads << " M=" << M;
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

double max_abs(const std::vector<float>& a) {
  double m = 0;
  for (const float v : a) m = std::max(m, double(std::fabs(v)));
  return m;
}

TEST(CudaModelOps, AddRmsNormMatchesAddThenRmsNorm) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("AddRmsNorm");
  for (const int64_t n : {int64_t(512), int64_t(128), int64_t(5120)}) {
    const int64_t rows = 5, cols = n == 128 ? 40 * 128 : n;
    const auto w = normal(rng, size_t(n));
    const auto wc = b.cpu->load_vector(w), wg = b.gpu->load_vector(w);
    Pair x(*b.cpu, *b.gpu, rows, cols, normal(rng, size_t(rows * cols), 3.0f));
    Pair y(*b.cpu, *b.gpu, rows, cols, normal(rng, size_t(rows * cols), 3.0f));
    Pair out(*b.cpu, *b.gpu, rows, cols, std::vector<float>(size_t(rows * cols), NAN));
    b.cpu->add(x.cpu.act, y.cpu.act);
    b.cpu->rmsnorm(x.cpu.act, *wc, 1e-6f, out.cpu.act);
    b.gpu->add_rmsnorm(x.gpu.act, y.gpu.act, *wg, 1e-6f, out.gpu.act);
    const double dx = max_abs_diff(host(*b.gpu, x.gpu.act), host(*b.cpu, x.cpu.act));
    const double d = max_abs_diff(host(*b.gpu, out.gpu.act), host(*b.cpu, out.cpu.act));
    std::printf("add_rmsnorm n=%lld: x max |d| = %.3g, out max |d| = %.3g\n", (long long)n, dx, d);
    EXPECT_EQ(dx, 0.0);
    EXPECT_LE(d, 1e-5);
  }
}

// The kernel on its own: q, k (and v) of `heads`/`kv_heads` heads of d at
// pos0 = 3001, fp32 in place or bf16 in, with or without the norm.
TEST(CudaModelOps, QkNormRopeMatchesRmsNormThenRope) {
  TRELLIS_REQUIRE_GPU();
  Backends b;
  auto rng = fresh_rng("QkNormRope");
  const int64_t rows = 5, heads = 8, kv_heads = 2, pos0 = 3001;
  for (const int64_t d : {int64_t(64), int64_t(128)})
    for (const bool bf16_in : {false, true})
      for (const bool norm : {false, true}) {
        std::vector<float> f(size_t(d / 2));
        for (size_t i = 0; i < f.size(); ++i) f[i] = float(1.0 / std::pow(1e6, 2.0 * double(i) / double(d)));
        const auto fc = b.cpu->load_vector(f);
        const auto qn = normal(rng, size_t(d)), kn = normal(rng, size_t(d));
        const auto qnc = b.cpu->load_vector(qn), knc = b.cpu->load_vector(kn);
        // Inputs: bf16-representable when the kernel reads bf16.
        const auto draw = [&](int64_t cols) {
          auto v = normal(rng, size_t(rows * cols), 3.0f);
          if (bf16_in)
            for (float& e : v) e = bf16_to_float(float_to_bf16(e));
          return v;
        };
        const auto qv = draw(heads * d), kv = draw(kv_heads * d), vv = draw(kv_heads * d);
        Pair q(*b.cpu, *b.gpu, rows, heads * d, qv), k(*b.cpu, *b.gpu, rows, kv_heads * d, kv);
        Pair v(*b.cpu, *b.gpu, rows, kv_heads * d, std::vector<float>(vv.size(), NAN));
        if (norm) {
          b.cpu->rmsnorm(q.cpu.act, *qnc, 1e-6f, q.cpu.act);
          b.cpu->rmsnorm(k.cpu.act, *knc, 1e-6f, k.cpu.act);
        }
        b.cpu->rope(q.cpu.act, *fc, pos0);
        b.cpu->rope(k.cpu.act, *fc, pos0);

        model::cuda::QkNormRopeArgs a;
        std::vector<uint16_t> raw;
        uint16_t* dev_bf16 = nullptr;
        if (bf16_in) {
          for (const auto* src : {&qv, &kv, &vv})
            for (const float e : *src) raw.push_back(float_to_bf16(e));
          ASSERT_EQ(cudaMalloc(&dev_bf16, raw.size() * 2), cudaSuccess);
          cudaMemcpy(dev_bf16, raw.data(), raw.size() * 2, cudaMemcpyHostToDevice);
          a.q = dev_bf16;
          a.k = dev_bf16 + qv.size();
          a.v = dev_bf16 + qv.size() + kv.size();
          a.bf16_in = true;
          a.v_out = static_cast<float*>(v.gpu.act.data);
        } else {
          a.q = q.gpu.act.data;
          a.k = k.gpu.act.data;
        }
        a.q_out = static_cast<float*>(q.gpu.act.data);
        a.k_out = static_cast<float*>(k.gpu.act.data);
        float *dqn = nullptr, *dkn = nullptr, *df = nullptr;
        ASSERT_EQ(cudaMalloc(&dqn, size_t(d) * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&dkn, size_t(d) * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&df, f.size() * 4), cudaSuccess);
        cudaMemcpy(dqn, qn.data(), size_t(d) * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(dkn, kn.data(), size_t(d) * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(df, f.data(), f.size() * 4, cudaMemcpyHostToDevice);
        a.q_norm = norm ? dqn : nullptr;
        a.k_norm = norm ? dkn : nullptr;
        a.eps = 1e-6f;
        a.inv_freq = df;
        a.half = int(d / 2);
        a.M = rows;
        a.heads = int(heads);
        a.kv_heads = int(kv_heads);
        a.pos = {nullptr, int(pos0)};
        model::cuda::launch_qk_norm_rope(a, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

        const double dq = max_abs_diff(host(*b.gpu, q.gpu.act), host(*b.cpu, q.cpu.act));
        const double dk = max_abs_diff(host(*b.gpu, k.gpu.act), host(*b.cpu, k.cpu.act));
        std::printf("qk_norm_rope d=%lld %s%s: q max |d| = %.3g, k max |d| = %.3g\n", (long long)d,
                    bf16_in ? "bf16 in" : "fp32 in place", norm ? ", norm" : "", dq, dk);
        EXPECT_LE(dq, 1e-5);
        EXPECT_LE(dk, 1e-5);
        if (bf16_in) {
          EXPECT_EQ(max_abs_diff(host(*b.gpu, v.gpu.act), vv), 0.0) << "v widened";
        }
        cudaFree(dev_bf16);
        cudaFree(dqn);
        cudaFree(dkn);
        cudaFree(df);
      }
}

// A fused op's output against the same backend's composition (within
// same_bound) and against the CPU's (within cpu_bound of the largest |ref|).
void check_fused(const char* model, int64_t M, const char* what, const std::vector<float>& got,
                 const std::vector<float>& same, const std::vector<float>& ref, double same_bound, double cpu_bound) {
  const double ds = max_abs_diff(got, same), dr = max_abs_diff(got, ref), scale = max_abs(ref);
  std::printf("%s M=%lld %s: vs cuda composition max |d| = %.3g, vs cpu max |d| = %.3g (max |ref| %.3g)\n", model,
              (long long)M, what, ds, dr, scale);
  EXPECT_LE(ds, same_bound) << model << " M=" << M << " " << what;
  EXPECT_LE(dr, cpu_bound * scale) << model << " M=" << M << " " << what;
}

// values into an activation of either backend (a CUDA backend's are in device memory).
void upload(model::Backend& b, const model::Act& a, const std::vector<float>& values) {
  if (model::cuda_graph_stats(b))
    cudaMemcpy(a.data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice);
  else
    std::copy(values.begin(), values.end(), static_cast<float*>(a.data));
}

// Layer 0 of a model on one backend: h random (one draw for both backends),
// then qkv_rope and mlp fused or composed.
struct LayerRun {
  std::vector<float> q, k, v, mlp;
};

LayerRun run_layer0(const model::Model& m, const std::vector<float>& h, int64_t M, int64_t pos0, bool composed) {
  model::Backend& b = m.backend();
  const model::Architecture& a = m.arch();
  const model::LayerWeights& l = m.weights().layers.front();
  auto x = b.alloc(M, a.hidden), q = b.alloc(M, a.heads * a.head_dim), k = b.alloc(M, a.kv_heads * a.head_dim),
       v = b.alloc(M, a.kv_heads * a.head_dim), mid = b.alloc(M, a.intermediate), out = b.alloc(M, a.hidden);
  upload(b, x.act, h);
  const model::VectorWeight *qn = l.q_norm.get(), *kn = l.k_norm.get();
  const auto& f = *m.weights().rope_inv_freq;
  if (composed) {
    b.model::Backend::qkv_rope(*l.q, *l.k, *l.v, x.act, qn, kn, a.rms_eps, f, pos0, q.act, k.act, v.act);
    b.model::Backend::mlp(*l.gate_up, *l.down, x.act, mid.act, out.act);
  } else {
    b.qkv_rope(*l.q, *l.k, *l.v, x.act, qn, kn, a.rms_eps, f, pos0, q.act, k.act, v.act);
    b.mlp(*l.gate_up, *l.down, x.act, mid.act, out.act);
  }
  return {host(b, q.act), host(b, k.act), host(b, v.act), host(b, out.act)};
}

// Layer 0's residual ops in the forward's order on one backend: fused after
// reserve() (which tells the CUDA backend which layer reads each norm), or
// composed without it (so no norm hands its reader an image: the conversion
// kernels run).
struct ResidualRun {
  std::vector<float> q, k, v, attn, x, h;
};

ResidualRun run_residual_ops(const model::Model& m, const std::vector<float>& x0, const std::vector<float>& attn0,
                             int64_t M, bool composed, bool with_attention) {
  model::Backend& b = m.backend();
  const model::Architecture& a = m.arch();
  const model::ModelWeights& w = m.weights();
  const model::LayerWeights& l = w.layers.front();
  const auto cache = b.make_kv_cache(a.layers, a.kv_heads, a.head_dim, 64);  // M ≤ 40 positions
  if (!composed) b.reserve(w, *cache, M);
  auto x = b.alloc(M, a.hidden), h = b.alloc(M, a.hidden), q = b.alloc(M, a.heads * a.head_dim),
       k = b.alloc(M, a.kv_heads * a.head_dim), v = b.alloc(M, a.kv_heads * a.head_dim),
       attn = b.alloc(M, a.heads * a.head_dim), proj = b.alloc(M, a.hidden), mid = b.alloc(M, a.intermediate);
  upload(b, x.act, x0);
  upload(b, attn.act, attn0);
  const model::VectorWeight& next_norm = w.layers.size() > 1 ? *w.layers[1].input_norm : *w.final_norm;
  const auto& f = *w.rope_inv_freq;
  const float eps = a.rms_eps;
  b.rmsnorm(x.act, *l.input_norm, eps, h.act);
  if (with_attention) {
    // q, k and v composed in both runs, so attention's inputs (and output) are the same bits.
    b.model::Backend::qkv_rope(*l.q, *l.k, *l.v, h.act, l.q_norm.get(), l.k_norm.get(), eps, f, 17, q.act, k.act,
                               v.act);
    b.attention(q.act, k.act, v.act, *cache, 0, 0, attn.act);  // from position 0: no cache row read unwritten
    if (composed)
      b.model::Backend::linear_add_rmsnorm(*l.o, attn.act, proj.act, x.act, *l.post_attention_norm, eps, h.act);
    else
      b.linear_add_rmsnorm(*l.o, attn.act, proj.act, x.act, *l.post_attention_norm, eps, h.act);
  } else if (composed) {
    b.model::Backend::qkv_rope(*l.q, *l.k, *l.v, h.act, l.q_norm.get(), l.k_norm.get(), eps, f, 17, q.act, k.act,
                               v.act);
    b.model::Backend::linear_add_rmsnorm(*l.o, attn.act, proj.act, x.act, *l.post_attention_norm, eps, h.act);
    b.model::Backend::mlp_add_rmsnorm(*l.gate_up, *l.down, h.act, mid.act, proj.act, x.act, next_norm, eps, h.act);
  } else {
    b.qkv_rope(*l.q, *l.k, *l.v, h.act, l.q_norm.get(), l.k_norm.get(), eps, f, 17, q.act, k.act, v.act);
    b.linear_add_rmsnorm(*l.o, attn.act, proj.act, x.act, *l.post_attention_norm, eps, h.act);
    b.mlp_add_rmsnorm(*l.gate_up, *l.down, h.act, mid.act, proj.act, x.act, next_norm, eps, h.act);
  }
  return {host(b, q.act), host(b, k.act), host(b, v.act), host(b, attn.act), host(b, x.act), host(b, h.act)};
}

// A copy of the 3-bit model whose o projections keep their trellis codes but
// have no rotation (config entries without "rotation", no .signs tensors):
// o then reads its input as it is, so attention hands it a bf16 image.
std::filesystem::path three_bit_without_o_rotation() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trellis-3bit-o-unrotated-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(test::k3BitDir))
    if (e.path().filename() != "model.safetensors" && e.path().filename() != "config.json")
      fs::copy_file(e.path(), dir / e.path().filename());
  auto config = nlohmann::json::parse(std::ifstream(test::k3BitDir / "config.json"));
  for (auto& [name, entry] : config["quantization"].items())
    if (name.find(".o_proj") != std::string::npos) entry.erase("rotation");
  std::ofstream(dir / "config.json") << config.dump(1);
  const auto store = format::TensorStore::open_file(test::k3BitDir / "model.safetensors");
  std::vector<format::TensorToWrite> kept;
  for (const format::TensorInfo* t : store.tensors())
    if (t->name.find(".o_proj.signs") == std::string::npos) kept.push_back({t->name, t->dtype, t->shape, t->data});
  format::write_safetensors(dir / "model.safetensors", kept);
  return dir;
}

// qkv_rope and mlp on their own (run_layer0), then a layer's residual ops
// (run_residual_ops), each fused against composed and against the CPU.
TEST(CudaModelOps, FusedOpsMatchTheirCompositions) {
  TRELLIS_REQUIRE_GPU();
  auto rng = fresh_rng("FusedOps");
  const std::filesystem::path unrotated_o = three_bit_without_o_rotation();
  for (const auto& dir : {test::k3BitDir, unrotated_o, test::kBf16Dir}) {
    const bool trellis = dir != test::kBf16Dir;
    const model::Model gpu(dir, model::make_cuda_backend({.graphs = false}));
    const model::Model gpu_composed(dir, model::make_cuda_backend({.graphs = false}));
    const model::Model cpu(dir, model::make_cpu_backend());
    const model::Architecture& a = gpu.arch();
    for (const int64_t M : {int64_t(1), int64_t(5), int64_t(40)}) {
      const double cpu_bound = trellis ? 1.0 / 64 : 1e-4;
      const char* model = !trellis ? "bf16" : dir == unrotated_o ? "3-bit, o unrotated" : "3-bit";
      const auto check = [&](const char* what, const std::vector<float>& got, const std::vector<float>& same,
                             const std::vector<float>& ref, double same_bound) {
        check_fused(model, M, what, got, same, ref, same_bound, cpu_bound);
      };
      const auto h = normal(rng, size_t(M * a.hidden));
      const LayerRun fused = run_layer0(gpu, h, M, 17, false);
      const LayerRun composed = run_layer0(gpu, h, M, 17, true);
      const LayerRun reference = run_layer0(cpu, h, M, 17, true);
      check("qkv_rope q", fused.q, composed.q, reference.q, 1e-5);
      check("qkv_rope k", fused.k, composed.k, reference.k, 1e-5);
      check("qkv_rope v", fused.v, composed.v, reference.v, 0.0);
      check("mlp", fused.mlp, composed.mlp, reference.mlp, 0.0);

      const auto x0 = normal(rng, size_t(M * a.hidden), 3.0f), attn0 = normal(rng, size_t(M * a.heads * a.head_dim));
      const ResidualRun rf = run_residual_ops(gpu, x0, attn0, M, false, false);
      const ResidualRun rc = run_residual_ops(gpu_composed, x0, attn0, M, true, false);
      const ResidualRun rr = run_residual_ops(cpu, x0, attn0, M, true, false);
      check("residual ops q", rf.q, rc.q, rr.q, 1e-5);
      check("residual ops k", rf.k, rc.k, rr.k, 1e-5);
      check("residual ops v", rf.v, rc.v, rr.v, 0.0);
      check("residual ops x", rf.x, rc.x, rr.x, 0.0);
      check("residual ops h", rf.h, rc.h, rr.h, 0.0);
      // With attention between qkv_rope and o: where o takes its input as it
      // is (the unrotated-o copy), the fused run's o reads attention's bf16
      // image instead of converting attention's output, which must give the
      // composition's x and h bit for bit.
      const ResidualRun af = run_residual_ops(gpu, x0, attn0, M, false, true);
      const ResidualRun ac = run_residual_ops(gpu_composed, x0, attn0, M, true, true);
      const ResidualRun ar = run_residual_ops(cpu, x0, attn0, M, true, true);
      check("attention", af.attn, ac.attn, ar.attn, 0.0);
      check("attention then o: x", af.x, ac.x, ar.x, 0.0);
      check("attention then o: h", af.h, ac.h, ar.h, 0.0);
    }
  }
  std::filesystem::remove_all(unrotated_o);
}

}  // namespace
}  // namespace trellis
