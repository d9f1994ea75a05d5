// The CUDA backend's fused residual norms (CudaBackendOptions.fuse_norms,
// trellis_ops.hpp) on a small llama written here whose projections are all
// trellis-coded without rotation (the shipped 3-bit model rotates every
// reader's input, so it never fuses): k = 2, 3, 4 and the k3-interleaved
// layout, q/k/v stackable, o and gate/up small enough for the CUDA-core
// forms at one row, down on the tensor-core axis-0 forms. The embedding is
// N(0, 8), so a norm's scale is ≈ 1/8 and a reader that ignored it would be
// 8x off.
//   - Decode steps (M = 1, graphs) with fusion against the same model with
//     every norm launched and against the CPU backend, under the default
//     forms and with the numerics pinned (factored: q/k/v and gate/up on
//     imma, o on imma, which cannot produce; f32: down on scatter, which
//     cannot): logits close, and the profile shows exactly the norms each
//     configuration can fuse gone from the step.
//   - An op other than the reader after a fused producer (here: reading the
//     norm's output back) gets the launched norm's output bit for bit.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/model_files.hpp"
#include "model_cuda_fixture.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

using format::DType;

constexpr int64_t kHidden = 512, kInter = 1536, kHeads = 8, kKvHeads = 4, kHeadDim = 64, kVocab = 96, kLayers = 3;

struct Coded {
  std::string module;
  int k, axis, interleave;
  int64_t out, in;
};

std::vector<Coded> coded_layers() {
  const int o_k[kLayers] = {2, 4, 3}, gate_k[kLayers] = {3, 2, 4}, up_k[kLayers] = {3, 4, 2}, down_k[kLayers] = {3, 2, 4};
  std::vector<Coded> c;
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* qkv : {"q_proj", "k_proj", "v_proj"})
      c.push_back({p + "self_attn." + qkv, 3, 1, 0, std::string(qkv) == "q_proj" ? kHeads * kHeadDim : kKvHeads * kHeadDim,
                   kHidden});
    c.push_back({p + "self_attn.o_proj", o_k[l], 1, 0, kHidden, kHeads * kHeadDim});
    c.push_back({p + "mlp.gate_proj", gate_k[l], 1, 0, kInter, kHidden});
    c.push_back({p + "mlp.up_proj", up_k[l], 1, 0, kInter, kHidden});
    c.push_back({p + "mlp.down_proj", down_k[l], 0, l == 0 ? 2 : 0, kHidden, kInter});
  }
  return c;
}

std::vector<uint16_t> bf16_values(std::mt19937& rng, size_t n, float mean, float sd) {
  std::normal_distribution<float> d(mean, sd);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(d(rng));
  return v;
}

void write_model(const std::filesystem::path& dir) {
  std::mt19937 rng(4321);
  std::vector<test::OwnedTensor> t;
  t.push_back(test::make_tensor("model.embed_tokens.weight", DType::BF16, {kVocab, kHidden},
                                bf16_values(rng, size_t(kVocab * kHidden), 0.0f, 8.0f)));
  t.push_back(test::make_tensor("model.norm.weight", DType::BF16, {kHidden}, bf16_values(rng, size_t(kHidden), 1.0f, 0.1f)));
  for (int64_t l = 0; l < kLayers; ++l)
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"})
      t.push_back(test::make_tensor("model.layers." + std::to_string(l) + "." + norm + ".weight", DType::BF16, {kHidden},
                                    bf16_values(rng, size_t(kHidden), 1.0f, 0.1f)));
  nlohmann::json q = nlohmann::json::object();
  for (const Coded& c : coded_layers()) {
    const TrellisGeometry g = make_geometry(c.k, 12, 256, c.axis, c.out, c.in, c.interleave);
    std::vector<uint32_t> codes(size_t(g.total_words()));
    for (auto& w : codes) w = rng();
    const std::vector<uint16_t> scales(size_t(g.rows), float_to_fp16(float(1.0 / std::sqrt(double(c.in)))));
    const std::vector<int64_t> shape = c.interleave ? std::vector<int64_t>{g.cols / 512, g.rows, 48}
                                                    : std::vector<int64_t>{g.rows, g.words_per_row()};
    t.push_back(test::make_tensor(c.module + ".weight", DType::U32, shape, codes));
    t.push_back(test::make_tensor(c.module + ".scales", DType::F16, {g.rows}, scales));
    q[c.module] = {{"mode", "trellis"}, {"bits", c.k}, {"group_size", 256},
                   {"trellis", {{"L", 12}, {"code", "1mad"}, {"axis", c.axis}}}};
  }
  const nlohmann::json config = {{"model_type", "llama"},         {"hidden_size", kHidden},
                                 {"intermediate_size", kInter},   {"num_hidden_layers", kLayers},
                                 {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads},
                                 {"vocab_size", kVocab},          {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 500000.0},        {"tie_word_embeddings", true},
                                 {"max_position_embeddings", 64}, {"quantization", q}};
  test::write_file(dir / "config.json", config.dump());
  test::write_tensors(dir / "model.safetensors", t);
}

const std::filesystem::path& model_dir() {
  static const test::TempDir dir;
  static const bool written = (write_model(dir.path()), true);
  (void)written;
  return dir.path();
}

double relative(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err += double(got[i] - want[i]) * double(got[i] - want[i]);
    norm += double(want[i]) * double(want[i]);
  }
  return std::sqrt(err / norm);
}

std::vector<int32_t> tokens(size_t n) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = int32_t((i * 37 + 11) % kVocab);
  return t;
}

struct Config {
  const char* name;
  model::CudaTrellisOptions trellis;
  int fused_per_step;  // residual norms a decode step does not launch
};

TEST(CudaNormFusion, DecodeMatchesTheLaunchedNormsAndTheCpu) {
  TRELLIS_REQUIRE_GPU();
  constexpr int64_t kPrefill = 4, kSteps = 16;
  const auto t = tokens(size_t(kPrefill + kSteps));
  const model::Model cpu(model_dir(), model::make_cpu_backend());
  const auto want = test::incremental_logits(cpu, t, kPrefill);
  const Config configs[] = {
      // o (reduce) → gate/up (gate_up), and down (imma axis 0) → q/k/v (reduce), but the last down's norm is the final one.
      {"default", {}, 2 * kLayers - 1},
      // Only down → q/k/v (imma): o on imma cannot produce.
      {"factored", {.numerics = Numerics::factored, .tail = std::nullopt}, kLayers - 1},
      // Only o → gate/up: down on scatter cannot produce.
      {"f32", {.numerics = Numerics::f32, .tail = std::nullopt}, kLayers}};
  for (const Config& c : configs) {
    const model::Model fused(model_dir(), model::make_cuda_backend({.fuse_norms = true, .trellis = c.trellis}));
    const model::Model plain(model_dir(), model::make_cuda_backend({.fuse_norms = false, .trellis = c.trellis}));
    const model::Model profiled(model_dir(),
                                model::make_cuda_backend({.profile = true, .fuse_norms = true, .trellis = c.trellis}));
    const auto got = test::incremental_logits(fused, t, kPrefill);
    const auto launched = test::incremental_logits(plain, t, kPrefill);
    const auto timed = test::incremental_logits(profiled, t, kPrefill);
    const double vs_launched = relative(got, launched), vs_cpu = relative(got, want), launched_vs_cpu = relative(launched, want);
    std::printf("%s: fused vs launched norms %.3g, fused vs cpu %.3g, launched vs cpu %.3g\n", c.name, vs_launched,
                vs_cpu, launched_vs_cpu);
    EXPECT_LE(vs_launched, 1e-2) << c.name;
    EXPECT_LE(vs_cpu, std::max(2 * launched_vs_cpu, 1e-2)) << c.name;
    EXPECT_EQ(relative(timed, got), 0.0) << c.name << ": profiling (eager steps) changed the fused logits";

    const auto doc = nlohmann::json::parse(model::cuda_profile(profiled.backend())->json);
    double norms = 0, producers = 0, readers = 0;
    for (const auto& row : doc["phases"]["decode"]["by_part"]) {
      const auto op = row["op"].get<std::string>(), part = row["part"].get<std::string>();
      const double calls = row["calls_per_forward"].get<double>();
      if (op == "add_rmsnorm") norms += calls;
      if (part.find("add+norm partials") != std::string::npos) producers += calls;
      if (part.find("norm scale") != std::string::npos) readers += calls;
    }
    // Unfused, a step launches an add_rmsnorm after every o and every down.
    EXPECT_EQ(norms, 2 * kLayers - c.fused_per_step) << c.name;
    EXPECT_EQ(producers, c.fused_per_step) << c.name;
    EXPECT_GE(readers, c.fused_per_step) << c.name;
  }
}

std::vector<float> host(model::Backend& b, const model::Act& a) {
  std::vector<float> v(size_t(a.rows * a.cols));
  b.to_host(a, v.data());
  return v;
}

// Layer 0's residual ops at one row up to o's fused norm, then its output read
// back (not by its reader): the backend must launch the norm first.
std::pair<std::vector<float>, std::vector<float>> residual_then_read(const model::Model& m, const std::vector<float>& x0) {
  model::Backend& b = m.backend();
  const model::Architecture& a = m.arch();
  const model::ModelWeights& w = m.weights();
  const model::LayerWeights& l = w.layers.front();
  const auto cache = b.make_kv_cache(a.layers, a.kv_heads, a.head_dim, 64);
  b.reserve(w, *cache, 1);
  auto x = b.alloc(1, a.hidden), h = b.alloc(1, a.hidden), q = b.alloc(1, a.heads * a.head_dim),
       k = b.alloc(1, a.kv_heads * a.head_dim), v = b.alloc(1, a.kv_heads * a.head_dim),
       attn = b.alloc(1, a.heads * a.head_dim), proj = b.alloc(1, a.hidden);
  cudaMemcpy(x.act.data, x0.data(), x0.size() * sizeof(float), cudaMemcpyHostToDevice);
  const float eps = a.rms_eps;
  b.rmsnorm(x.act, *l.input_norm, eps, h.act);
  b.qkv_rope(*l.q, *l.k, *l.v, h.act, nullptr, nullptr, eps, *w.rope_inv_freq, 0, q.act, k.act, v.act);
  b.attention(q.act, k.act, v.act, *cache, 0, 0, attn.act);
  b.linear_add_rmsnorm(*l.o, attn.act, proj.act, x.act, *l.post_attention_norm, eps, h.act);
  auto normed = host(b, h.act);
  return {normed, host(b, x.act)};
}

TEST(CudaNormFusion, AnyOtherReaderGetsTheLaunchedNorm) {
  TRELLIS_REQUIRE_GPU();
  std::mt19937_64 rng(7);
  std::normal_distribution<float> d(0.0f, 8.0f);
  std::vector<float> x0(static_cast<size_t>(kHidden));
  for (float& v : x0) v = d(rng);
  const model::Model fused(model_dir(), model::make_cuda_backend({.graphs = false, .fuse_norms = true}));
  const model::Model plain(model_dir(), model::make_cuda_backend({.graphs = false, .fuse_norms = false}));
  const auto [h_fused, x_fused] = residual_then_read(fused, x0);
  const auto [h_plain, x_plain] = residual_then_read(plain, x0);
  EXPECT_EQ(x_fused, x_plain) << "the residual after o";
  EXPECT_EQ(h_fused, h_plain) << "the norm's output read by an op other than its reader";
}

}  // namespace
}  // namespace trellis
