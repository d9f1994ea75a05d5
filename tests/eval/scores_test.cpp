// The pieces of `trellis eval` without a model: per-token scores, their
// summaries (llama-perplexity conventions), window plans and text splits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../model/model_files.hpp"
#include "trellis/eval/stats.hpp"
#include "trellis/eval/text_split.hpp"
#include "trellis/eval/token_scores.hpp"
#include "trellis/eval/windows.hpp"

namespace trellis::eval {
namespace {

TEST(EvalScores, LogSoftmaxNormalizes) {
  std::vector<float> z{1.0f, 2.0f, 3.0f, -50.0f}, lp(4);
  log_softmax(z, lp);
  double sum = 0;
  for (float v : lp) sum += std::exp(double(v));
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(lp[2] - lp[1], 1.0, 1e-6);
}

TEST(EvalScores, KlOfKnownDistributions) {
  // P_ref = (0.5, 0.5), P = (0.25, 0.75): KL = 0.5 ln 2 + 0.5 ln(2/3).
  const std::vector<float> ref{std::log(0.5f), std::log(0.5f)}, q{std::log(0.25f), std::log(0.75f)};
  const auto c = compare_token(q, ref, 0);
  EXPECT_NEAR(c.kld, 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0), 1e-6);
  EXPECT_NEAR(c.nll, std::log(4.0), 1e-6);
  EXPECT_NEAR(c.ref_nll, std::log(2.0), 1e-6);
  EXPECT_FALSE(c.same_top);  // ref ties → index 0; model → index 1
  EXPECT_EQ(compare_token(ref, ref, 1).kld, 0.0);
}

TEST(EvalStats, PerplexityAndItsUncertainty) {
  Scores s;
  s.nll = {1.0, 2.0, 3.0, 4.0};
  const auto sum = summarize(s);
  EXPECT_DOUBLE_EQ(sum.ppl.mean_nll, 2.5);
  EXPECT_DOUBLE_EQ(sum.ppl.ppl, std::exp(2.5));
  // s² = 5/3, se = sqrt(5/12)
  EXPECT_NEAR(sum.ppl.ppl_err, std::exp(2.5) * std::sqrt(5.0 / 12.0), 1e-9);
  EXPECT_FALSE(sum.kl);
}

TEST(EvalStats, KlSummary) {
  Scores s;
  s.nll = {1.0, 2.0, 3.0};
  s.ref_nll = {1.0, 2.0, 3.0};
  s.kld = {0.0, 0.1, 0.2};
  s.same_top = {1, 1, 0};
  const auto k = *summarize(s).kl;
  EXPECT_NEAR(k.mean_kld, 0.1, 1e-12);
  EXPECT_NEAR(k.kld_max, 0.2, 1e-12);
  EXPECT_NEAR(k.kld_p90, 0.18, 1e-12);
  EXPECT_NEAR(k.same_top, 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(k.delta_ppl, 0.0);
  EXPECT_NEAR(k.delta_ppl_err, 0.0, 1e-9);  // identical NLLs: fully correlated
}

TEST(EvalStats, Percentile) {
  EXPECT_EQ(percentile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 0.99), 1.99);
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 1.0), 2.0);
}

TEST(EvalWindows, Plan) {
  const auto p = plan_windows(1030, 512);
  EXPECT_EQ(p.count, 2);
  EXPECT_EQ(p.predictions(), 2 * 511);
  EXPECT_EQ(plan_windows(1030, 512, 1).count, 1);
  test::expect_error([] { plan_windows(100, 1); }, {"at least 2 tokens"});
  test::expect_error([] { plan_windows(100, 512); }, {"100 tokens", "fewer than one window"});
}

TEST(EvalText, TinyShakespeareValidationSplit) {
  EXPECT_EQ(val_split_byte(1115394), 1003854u);
  const auto val = read_text(TRELLIS_SOURCE_DIR "/data/tinyshakespeare.txt", Split::val);
  EXPECT_EQ(val.begin, 1003854u);
  EXPECT_EQ(val.end, 1115394u);
  EXPECT_EQ(val.text.size(), 1115394u - 1003854u);
  const auto train = read_text(TRELLIS_SOURCE_DIR "/data/tinyshakespeare.txt", Split::train);
  EXPECT_EQ(train.end, 1003854u);
  const auto from = read_text(TRELLIS_SOURCE_DIR "/data/tinyshakespeare.txt", Split::all, 1115390);
  EXPECT_EQ(from.text.size(), 4u);
}

TEST(EvalText, CutsAtCharacterBoundaries) {
  test::TempDir dir;
  test::write_file(dir / "t.txt", "ab\xc3\xa9" "cdefghi");  // é is bytes 2 and 3
  const auto s = read_text(dir / "t.txt", Split::all, 3);      // a cut inside é moves past it
  EXPECT_EQ(s.begin, 4u);
  EXPECT_EQ(s.text, "cdefghi");
}

TEST(EvalText, Errors) {
  test::TempDir dir;
  test::expect_error([&] { read_text(dir / "missing.txt", Split::val); }, {"missing.txt", "cannot read"});
  test::write_file(dir / "t.txt", "abc");
  test::expect_error([&] { read_text(dir / "t.txt", Split::all, 4); }, {"past the end"});
  test::expect_error([] { parse_split("test"); }, {"unknown split 'test'"});
}

}  // namespace
}  // namespace trellis::eval
