// Parity of the CPU forward pass with Hugging Face transformers (fp32
// compute): logits of the 128 reference tokens in one batched forward
// (M = 128, positions 0..127) against reference_logits.safetensors; and
// incremental decoding (a prefill, then one token at a time) against the
// batched pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "fixture.hpp"
#include "trellis/model/session.hpp"

namespace trellis {
namespace {

constexpr int64_t kTokens = 128;

struct Reference {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [128, vocab]
};

Reference load_reference() {
  const format::SafetensorsFile f(test::kFixtureDir / "reference_logits.safetensors");
  const auto tokens = f.find("tokens")->values<int32_t>();
  const auto logits = f.find("logits")->values<float>();
  return {{tokens.begin(), tokens.end()}, {logits.begin(), logits.end()}};
}

int64_t top1(std::span<const float> row) { return std::max_element(row.begin(), row.end()) - row.begin(); }

TEST(ModelParity, BatchedForwardMatchesTransformers) {
  const Reference ref = load_reference();
  ASSERT_EQ(int64_t(ref.tokens.size()), kTokens);
  const model::Model& m = test::fixture_model();
  const int64_t vocab = m.arch().vocab;
  ASSERT_EQ(int64_t(ref.logits.size()), kTokens * vocab);

  model::Session s(m, kTokens, kTokens);
  const std::span<const float> got = s.forward(ref.tokens, /*all_logits=*/true);
  ASSERT_EQ(int64_t(got.size()), kTokens * vocab);

  double max_abs = 0;
  int same_top1 = 0;
  for (int64_t t = 0; t < kTokens; ++t) {
    const auto g = got.subspan(size_t(t * vocab), size_t(vocab));
    const auto r = std::span<const float>(ref.logits).subspan(size_t(t * vocab), size_t(vocab));
    for (int64_t i = 0; i < vocab; ++i) {
      ASSERT_TRUE(std::isfinite(g[size_t(i)])) << "position " << t << " logit " << i;
      max_abs = std::max(max_abs, double(std::fabs(g[size_t(i)] - r[size_t(i)])));
    }
    same_top1 += top1(g) == top1(r);
  }
  std::printf("parity vs transformers: max |dlogit| = %.3g, same top-1 on %d/%lld positions\n", max_abs, same_top1,
              (long long)kTokens);
  EXPECT_LE(max_abs, 0.05);  // the contract for every backend
  EXPECT_LE(max_abs, 1e-3);  // the CPU backend: fp32 throughout, RoPE frequencies as transformers rounds them
  EXPECT_GE(same_top1, kTokens - 1);
}

TEST(ModelParity, IncrementalDecodingMatchesBatched) {
  const Reference ref = load_reference();
  const model::Model& m = test::fixture_model();
  const int64_t vocab = m.arch().vocab;
  model::Session batched(m, kTokens, kTokens);
  const auto all = batched.forward(ref.tokens, true);
  const std::vector<float> expected(all.begin(), all.end());

  constexpr int64_t kPrefill = 100;
  model::Session inc(m, kTokens);
  std::vector<float> got(size_t(kTokens * vocab));
  const auto pre = inc.forward(std::span(ref.tokens).first(kPrefill), true);
  std::copy(pre.begin(), pre.end(), got.begin());
  for (int64_t t = kPrefill; t < kTokens; ++t) {
    const auto row = inc.forward(std::span(ref.tokens).subspan(size_t(t), 1));
    std::copy(row.begin(), row.end(), got.begin() + t * vocab);
  }
  EXPECT_EQ(inc.position(), kTokens);
  double max_abs = 0;
  for (size_t i = 0; i < got.size(); ++i) max_abs = std::max(max_abs, double(std::fabs(got[i] - expected[i])));
  std::printf("incremental vs batched: max |dlogit| = %.3g\n", max_abs);
  EXPECT_LE(max_abs, 1e-4);
}

TEST(ModelParity, ChunkedPromptMatchesOneBatch) {
  const Reference ref = load_reference();
  const model::Model& m = test::fixture_model();
  model::Session one(m, kTokens, kTokens);
  const auto a = one.forward(ref.tokens);
  const std::vector<float> expected(a.begin(), a.end());
  model::Session chunked(m, kTokens, 48);  // 48 + 48 + 32
  const auto b = chunked.forward(ref.tokens);
  ASSERT_EQ(b.size(), expected.size());
  for (size_t i = 0; i < b.size(); ++i) ASSERT_NEAR(b[i], expected[i], 1e-4) << i;
}

}  // namespace
}  // namespace trellis
