// The forward pass over trellis-coded layers: a small llama (tied
// embeddings) whose seven projections per layer are trellis tensors with
// random codes — k = 2, 3, 4, axes 1 and 0, the k3-interleaved layout, and
// Hadamard rotations on both axes — against the same model written with
// dense fp32 weights, obtained by expanding the codes and undoing the
// rotation with an explicit Sylvester Hadamard matrix (not the codec's
// fwht). The trellis path rounds activations to bf16 before each coded
// layer, so the logits agree to a relative tolerance, not bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model_files.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"
#include "trellis/model/cpu_backend.hpp"
#include "trellis/model/model.hpp"
#include "trellis/model/session.hpp"

namespace trellis {
namespace {

using format::DType;

constexpr int64_t kHidden = 512, kInter = 768, kHeads = 8, kKvHeads = 4, kHeadDim = 64, kVocab = 96, kLayers = 2;

struct Coded {
  std::string module;
  int k, axis, interleave;
  bool rotated;
  int64_t out, in;
};

std::vector<Coded> coded_layers() {
  std::vector<Coded> c;
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    c.push_back({p + "self_attn.q_proj", 2, 1, 0, true, kHeads * kHeadDim, kHidden});
    c.push_back({p + "self_attn.k_proj", 3, 1, 0, false, kKvHeads * kHeadDim, kHidden});
    c.push_back({p + "self_attn.v_proj", 4, 1, 0, false, kKvHeads * kHeadDim, kHidden});
    c.push_back({p + "self_attn.o_proj", 2, 0, 0, true, kHidden, kHeads * kHeadDim});
    c.push_back({p + "mlp.gate_proj", 3, 1, 0, true, kInter, kHidden});
    c.push_back({p + "mlp.up_proj", 2, 1, 0, false, kInter, kHidden});
    c.push_back({p + "mlp.down_proj", 3, 0, 2, l == 0, kHidden, kInter});
  }
  return c;
}

// x ← s ⊙ (H x) on every block of 256 of a strided vector, H the normalized
// Sylvester Hadamard matrix H[i][j] = (−1)^popcount(i & j) / 16.
void unrotate(float* x, int64_t n, int64_t stride, const std::vector<int8_t>& s) {
  constexpr int T = 256;
  std::vector<float> block(T);
  for (int64_t b = 0; b < n; b += T) {
    for (int i = 0; i < T; ++i) {
      double sum = 0;
      for (int j = 0; j < T; ++j) sum += (std::popcount(unsigned(i & j)) % 2 ? -1.0 : 1.0) * x[(b + j) * stride];
      block[size_t(i)] = float(sum / 16.0);
    }
    for (int i = 0; i < T; ++i) x[(b + i) * stride] = block[size_t(i)] * float(s[size_t(b + i)]);
  }
}

std::vector<uint16_t> bf16_values(std::mt19937& rng, size_t n, float mean, float sd) {
  std::normal_distribution<float> d(mean, sd);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(d(rng));
  return v;
}

nlohmann::json config(bool quantized) {
  nlohmann::json c = {{"model_type", "llama"},          {"hidden_size", kHidden},
                      {"intermediate_size", kInter},    {"num_hidden_layers", kLayers},
                      {"num_attention_heads", kHeads},  {"num_key_value_heads", kKvHeads},
                      {"vocab_size", kVocab},           {"rms_norm_eps", 1e-5},
                      {"rope_theta", 500000.0},         {"tie_word_embeddings", true},
                      {"max_position_embeddings", 64}};
  if (!quantized) return c;
  nlohmann::json q = nlohmann::json::object();
  for (const auto& l : coded_layers()) {
    q[l.module] = {{"mode", "trellis"}, {"bits", l.k}, {"group_size", 256},
                   {"trellis", {{"L", 12}, {"code", "1mad"}, {"axis", l.axis}}}};
    if (l.rotated) q[l.module]["rotation"] = "hadamard";
  }
  c["quantization"] = q;
  return c;
}

// Writes the trellis model to `coded_dir` and its dense fp32 twin to `dense_dir`.
void write_models(const std::filesystem::path& coded_dir, const std::filesystem::path& dense_dir) {
  std::mt19937 rng(1234);
  std::vector<test::OwnedTensor> common;
  common.push_back(test::make_tensor("model.embed_tokens.weight", DType::BF16, {kVocab, kHidden},
                                     bf16_values(rng, size_t(kVocab * kHidden), 0.0f, 1.0f)));
  common.push_back(test::make_tensor("model.norm.weight", DType::BF16, {kHidden},
                                     bf16_values(rng, size_t(kHidden), 1.0f, 0.1f)));
  for (int64_t l = 0; l < kLayers; ++l)
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"})
      common.push_back(test::make_tensor("model.layers." + std::to_string(l) + "." + norm + ".weight", DType::BF16,
                                         {kHidden}, bf16_values(rng, size_t(kHidden), 1.0f, 0.1f)));
  std::vector<test::OwnedTensor> coded = common, dense = common;

  for (const auto& l : coded_layers()) {
    const TrellisGeometry g = make_geometry(l.k, 12, 256, l.axis, l.out, l.in, l.interleave);
    std::vector<uint32_t> codes(size_t(g.total_words()));
    for (auto& w : codes) w = rng();
    const std::vector<uint16_t> scales(size_t(g.rows), float_to_fp16(float(1.0 / std::sqrt(double(l.in)))));
    std::vector<int8_t> signs(size_t(g.cols));
    for (auto& s : signs) s = rng() % 2 ? 1 : -1;

    std::vector<float> w(size_t(l.out * l.in));
    expand_to_f32({codes.data(), scales.data(), g}, w.data());  // W' [out, in]
    if (l.rotated) {
      if (l.axis == 1)  // W = W'·H·diag(s): each row ← s ⊙ H row
        for (int64_t o = 0; o < l.out; ++o) unrotate(&w[size_t(o * l.in)], l.in, 1, signs);
      else  // W = diag(s)·H·W': each column ← s ⊙ H column
        for (int64_t i = 0; i < l.in; ++i) unrotate(&w[size_t(i)], l.out, l.in, signs);
    }
    dense.push_back(test::make_tensor(l.module + ".weight", DType::F32, {l.out, l.in}, w));

    const std::vector<int64_t> shape = l.interleave ? std::vector<int64_t>{g.cols / 512, g.rows, 48}
                                                    : std::vector<int64_t>{g.rows, g.words_per_row()};
    coded.push_back(test::make_tensor(l.module + ".weight", DType::U32, shape, codes));
    coded.push_back(test::make_tensor(l.module + ".scales", DType::F16, {g.rows}, scales));
    if (l.rotated) coded.push_back(test::make_tensor(l.module + ".signs", DType::I8, {g.cols}, signs));
  }
  test::write_file(coded_dir / "config.json", config(true).dump());
  test::write_tensors(coded_dir / "model.safetensors", coded);
  test::write_file(dense_dir / "config.json", config(false).dump());
  test::write_tensors(dense_dir / "model.safetensors", dense);
}

TEST(TrellisModel, MatchesTheExpandedDenseModel) {
  const test::TempDir coded_dir, dense_dir;
  write_models(coded_dir.path(), dense_dir.path());
  const model::Model coded(coded_dir.path(), model::make_cpu_backend());
  const model::Model dense(dense_dir.path(), model::make_cpu_backend());
  ASSERT_EQ(coded.dir().trellis_tensors().size(), coded_layers().size());

  std::vector<int32_t> tokens(24);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 37 + 5) % kVocab);
  model::Session a(coded, 32), b(dense, 32);
  const auto la = a.forward(tokens, true);
  const std::vector<float> got(la.begin(), la.end());
  const auto want = b.forward(tokens, true);

  double err = 0, norm = 0;
  int same_top1 = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    size_t ia = 0, ib = 0;
    for (size_t v = 0; v < size_t(kVocab); ++v) {
      const size_t i = t * size_t(kVocab) + v;
      ASSERT_TRUE(std::isfinite(got[i]));
      err += double(got[i] - want[i]) * double(got[i] - want[i]);
      norm += double(want[i]) * double(want[i]);
      if (got[i] > got[t * size_t(kVocab) + ia]) ia = v;
      if (want[i] > want[t * size_t(kVocab) + ib]) ib = v;
    }
    same_top1 += ia == ib;
  }
  const double rel = std::sqrt(err / norm);
  std::printf("trellis vs expanded dense: relative logit error %.3g, same top-1 %d/%zu\n", rel, same_top1,
              tokens.size());
  EXPECT_LT(rel, 0.02);
  EXPECT_GE(same_top1, int(tokens.size()) - 2);
}

}  // namespace
}  // namespace trellis
