// Sampling: the repetition penalty, the top-k / top-p / min-p masks,
// greedy ties (and the argmax against std::max_element on random logits with
// NaNs, infinities and ties), top-k (and no top-k) against a full sort of the candidates, the
// leading candidates against the whole list, seeded determinism of the draws,
// sampling from the largest logits against sampling from the whole row, and
// the softmax's exp against std::exp; parameters outside their ranges are
// errors naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/error.hpp"
#include "trellis/model/sampling.hpp"

namespace trellis {
namespace {

using model::Candidate;

std::vector<int32_t> ids_of(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const auto& x : c) ids.push_back(x.id);
  return ids;
}

double mass(const std::vector<Candidate>& c) {
  double m = 0;
  for (const auto& x : c) m += x.prob;
  return m;
}

TEST(Sampling, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  std::vector<float> logits = {2.0f, -2.0f, 3.0f, 1.0f};
  const std::vector<int32_t> history = {0, 1, 1, 0, 99};  // repeats count once; ids outside the vocab are ignored
  model::apply_repetition_penalty(logits, history, 2.0f, 0);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 3.0f, 1.0f}));
}

TEST(Sampling, RepetitionPenaltyLooksOnlyAtTheLastTokens) {
  std::vector<float> logits = {2.0f, 2.0f, 2.0f};
  model::apply_repetition_penalty(logits, std::vector<int32_t>{0, 1, 2}, 2.0f, 2);
  EXPECT_EQ(logits, (std::vector<float>{2.0f, 1.0f, 1.0f}));
}

TEST(Sampling, ArgmaxTakesTheLowestIdOnTies) {
  EXPECT_EQ(model::argmax(std::vector<float>{1, 5, 5, 2}), 1);
}

// The reference is std::max_element: the first of the largest, where a NaN
// never replaces a value and a NaN in front stays. Lengths cross the argmax's
// 64-logit blocks; values are few (ties), with NaNs and infinities mixed in.
TEST(Sampling, ArgmaxIsMaxElementsAnswer) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const auto reference = [](const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
  };
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<float> v(rng() % 300);
    for (float& x : v) {
      const int c = int(rng() % 40);
      x = c == 0 ? NAN : c == 1 ? INFINITY : c == 2 ? -INFINITY : float(int(rng() % 9) - 4);
    }
    ASSERT_EQ(model::argmax(v), reference(v)) << "length " << v.size() << ", trial " << trial;
  }
  std::vector<float> vocab(151936);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  for (float& x : vocab) x = logit(rng);
  EXPECT_EQ(model::argmax(vocab), reference(vocab));
  vocab[151935] = 1e30f;  // the largest in the last, partial block
  EXPECT_EQ(model::argmax(vocab), 151935);
  EXPECT_EQ(model::argmax(std::vector<float>{}), 0);
}

TEST(Sampling, TopKKeepsTheLargestSortedAndNormalized) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f};
  const auto c = model::top_k_candidates(logits, 1.0f, 3);
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_NEAR(mass(c), 1.0, 1e-6);
  const double z = std::exp(0.0) + std::exp(-1.0) + std::exp(-2.0);
  EXPECT_NEAR(c[0].prob, 1.0 / z, 1e-6);
  EXPECT_EQ(model::top_k_candidates(logits, 1.0f, 0).size(), logits.size());  // 0: no top-k
}

// The reference sorts every (id, logit / temperature) by probability, ties by
// id, keeps the first k (every one for top-k 0) and takes their softmax in fp64. Lengths cross the
// scan's 64-logit blocks; few distinct values (ties, also after the
// division), infinities among them.
TEST(Sampling, TopKIsTheFirstKOfAFullSort) {
  std::mt19937 rng(11);
  // 1.49999988 and 1.5 (adjacent floats) divide by 0.7 to the same float: a later id with the larger logit
  // still loses that tie.
  // −0 and +0 tie.
  const std::vector<float> values = {-INFINITY, -3.0f, -1.0f, -0.0f, 0.0f, 0.25f, 1.0f, 1.49999988f, 1.5f, 2.5f, INFINITY};
  const auto reference = [](const std::vector<float>& logits, float t, size_t k) {
    std::vector<Candidate> c;
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({int32_t(i), logits[i] / t});
    std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
      return a.prob != b.prob ? a.prob > b.prob : a.id < b.id;
    });
    c.resize(k);
    return c;
  };
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + rng() % 300;
    std::vector<float> logits(n);
    const bool infinities = trial % 4 == 0;
    for (float& l : logits)
      l = infinities ? values[rng() % values.size()] : values[1 + rng() % (values.size() - 2)];
    const float t = trial % 3 == 0 ? 1.0f : trial % 3 == 1 ? 0.7f : 3.0f;
    // k = 0 (no top-k): every candidate, sorted.
    const size_t k = trial % 5 == 0 ? n : 1 + rng() % std::min<size_t>(n, 50);
    const auto got = model::top_k_candidates(logits, t, trial % 5 == 0 ? 0 : int(k));
    const auto want = reference(logits, t, k);
    ASSERT_EQ(ids_of(got), ids_of(want)) << "trial " << trial << ", n " << n << ", k " << k;
    if (std::isinf(want.front().prob)) continue;  // an infinite top: the softmax is NaN either way
    double z = 0;
    for (const auto& x : want) z += std::exp(double(x.prob) - double(want.front().prob));
    for (size_t i = 0; i < k; ++i)
      ASSERT_NEAR(got[i].prob, std::exp(double(want[i].prob) - double(want.front().prob)) / z, 1e-6)
          << "trial " << trial << ", candidate " << i;
  }
  std::vector<float> vocab(151936);
  for (float& l : vocab) l = std::normal_distribution<float>(0.0f, 3.0f)(rng);
  EXPECT_EQ(ids_of(model::top_k_candidates(vocab, 0.8f, 40)), ids_of(reference(vocab, 0.8f, 40)));
  EXPECT_EQ(ids_of(model::top_k_candidates(vocab, 0.8f, 0)), ids_of(reference(vocab, 0.8f, vocab.size())));
}

TEST(Sampling, TemperatureSharpensAndFlattens) {
  const std::vector<float> logits = {1.0f, 0.0f};
  const float cold = model::top_k_candidates(logits, 0.5f, 0)[0].prob;
  const float hot = model::top_k_candidates(logits, 2.0f, 0)[0].prob;
  EXPECT_NEAR(cold, 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
  EXPECT_NEAR(hot, 1.0 / (1.0 + std::exp(-0.5)), 1e-6);
}

// Without top-k the sampler takes leading_candidates, not every candidate:
// after keep_top_p and keep_min_p the same ids as the whole sorted list,
// and probabilities within 1e-6 (the total is summed in another order).
// Vocabularies of 200 to 151936 logits, peaked and flat, each filter alone
// and both; the peaked Qwen3-sized case must take the short path.
TEST(Sampling, LeadingCandidatesFilterAsTheWholeList) {
  std::mt19937 rng(5);
  const auto filtered = [](std::vector<Candidate> c, float p, float m) {
    model::keep_top_p(c, p);
    model::keep_min_p(c, m);
    return c;
  };
  const std::pair<float, float> filters[] = {{0.5f, 0.0f}, {0.95f, 0.0f}, {0.999f, 0.0f}, {1.0f, 0.05f},
                                             {0.95f, 0.05f}, {0.9f, 0.2f}};
  for (const size_t n : {size_t(200), size_t(5000), size_t(151936)}) {
    for (const float sd : {0.5f, 3.0f, 8.0f}) {
      std::vector<float> logits(n);
      for (float& l : logits) l = std::normal_distribution<float>(0.0f, sd)(rng);
      for (const float t : {0.7f, 1.3f}) {
        const auto all = model::top_k_candidates(logits, t, 0);
        for (const auto& [p, m] : filters) {
          const auto lead = model::leading_candidates(logits, t, p, m);
          const auto want = filtered(all, p, m), got = filtered(lead, p, m);
          ASSERT_EQ(ids_of(got), ids_of(want)) << "n " << n << " sd " << sd << " t " << t << " p " << p << " m " << m;
          for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i].prob, want[i].prob, 1e-6);
          if (n == 151936 && sd == 8.0f) {
            EXPECT_LT(lead.size(), n / 4) << "t " << t << " p " << p << " m " << m;
          }
        }
      }
    }
  }
  EXPECT_EQ(model::leading_candidates(std::vector<float>{1, 2, 3}, 1.0f, 1.0f, 0.0f).size(), 3u);  // no filter cuts
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingTheMass) {
  std::vector<Candidate> c = {{7, 0.5f}, {3, 0.3f}, {9, 0.15f}, {1, 0.05f}};
  auto p = c;
  model::keep_top_p(p, 0.8f);
  EXPECT_EQ(ids_of(p), (std::vector<int32_t>{7, 3}));
  EXPECT_NEAR(p[0].prob, 0.5 / 0.8, 1e-6);
  p = c;
  model::keep_top_p(p, 0.81f);
  EXPECT_EQ(ids_of(p), (std::vector<int32_t>{7, 3, 9}));
  p = c;
  model::keep_top_p(p, 0.1f);  // always one
  EXPECT_EQ(ids_of(p), (std::vector<int32_t>{7}));
  p = c;
  model::keep_top_p(p, 1.0f);
  EXPECT_EQ(p.size(), 4u);
}

TEST(Sampling, MinPDropsWhatIsFarBelowTheTop) {
  std::vector<Candidate> c = {{7, 0.5f}, {3, 0.3f}, {9, 0.15f}, {1, 0.05f}};
  model::keep_min_p(c, 0.3f);  // floor 0.15
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{7, 3, 9}));
  EXPECT_NEAR(mass(c), 1.0, 1e-6);
}

TEST(Sampling, GreedyIgnoresTheSeedAndAppliesThePenalty) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f};
  model::Sampler s({.temperature = 0, .repeat_penalty = 2.0f, .seed = 5});
  EXPECT_EQ(s.sample(logits, std::vector<int32_t>{1}), 2);  // 3/2 < 2
  EXPECT_FALSE(s.greedy());  // the penalty needs the logits on the host
}

// A parameter outside its range is an error that names it and the rule,
// not a silent change of meaning (a penalty of 0 would divide by zero).
TEST(Sampling, ParametersOutsideTheirRangesAreErrors) {
  const auto message = [](const model::SamplingParams& p) -> std::string {
    try {
      model::Sampler s(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message({.temperature = NAN}), "sampling: temperature must be a number (0 or below: greedy), got nan");
  EXPECT_EQ(message({.top_k = -1}), "sampling: top_k must be 0 (off) or more, got -1");
  EXPECT_EQ(message({.top_p = 1.5f}), "sampling: top_p must be in [0, 1] (1: off), got 1.5");
  EXPECT_EQ(message({.top_p = -0.25f}), "sampling: top_p must be in [0, 1] (1: off), got -0.25");
  EXPECT_EQ(message({.min_p = 2.0f}), "sampling: min_p must be in [0, 1] (0: off), got 2");
  EXPECT_EQ(message({.repeat_penalty = 0.0f}),
            "sampling: repeat_penalty must be a finite number above 0 (1: off), got 0");
  EXPECT_EQ(message({.repeat_penalty = INFINITY}),
            "sampling: repeat_penalty must be a finite number above 0 (1: off), got inf");
  EXPECT_EQ(message({.repeat_last_n = -4}), "sampling: repeat_last_n must be 0 (all) or more, got -4");
  // The ends of each range are allowed, and so is a temperature below 0 (greedy).
  EXPECT_EQ(message({.temperature = -1, .top_k = 0, .top_p = 0, .min_p = 1, .repeat_last_n = 0}), "");
  EXPECT_EQ(message({.top_p = 1, .min_p = 0, .repeat_penalty = 0.5f}), "");
}

// greedy(): the token is argmax(logits) whatever the history, so generation
// may let the backend find it.
TEST(Sampling, GreedyOnlyAtZeroTemperatureWithoutPenalty) {
  EXPECT_TRUE(model::Sampler({.temperature = 0}).greedy());
  EXPECT_TRUE(model::Sampler({.temperature = -1, .seed = 3}).greedy());
  EXPECT_FALSE(model::Sampler({.temperature = 0.5f}).greedy());
  EXPECT_FALSE(model::Sampler({.temperature = 0, .repeat_penalty = 1.1f}).greedy());
}

std::vector<int32_t> draws(uint64_t seed, int n) {
  const std::vector<float> logits = {0.0f, 0.5f, 1.0f, 0.2f, -0.3f, 0.9f};
  model::Sampler s({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed});
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    out.push_back(s.sample(l, {}));
  }
  return out;
}

TEST(Sampling, SameSeedSameTokens) {
  EXPECT_EQ(draws(42, 200), draws(42, 200));
  EXPECT_NE(draws(42, 200), draws(43, 200));
}

TEST(Sampling, DrawsFollowTheDistribution) {
  const auto d = draws(7, 20000);
  std::map<int32_t, int> count;
  for (const int32_t id : d) ++count[id];
  const std::vector<float> logits = {0.0f, 0.5f, 1.0f, 0.2f, -0.3f, 0.9f};
  double z = 0;
  for (const float l : logits) z += std::exp(l);
  for (int32_t i = 0; i < 6; ++i) EXPECT_NEAR(count[i] / 20000.0, std::exp(logits[size_t(i)]) / z, 0.015) << i;
}

TEST(Sampling, FiltersComposeInTheSampler) {
  // top-k 2 leaves ids 2 and 5; min-p 0.99 leaves only the top one.
  model::Sampler s({.temperature = 1.0f, .top_k = 2, .top_p = 1.0f, .min_p = 0.99f, .seed = 1});
  for (int i = 0; i < 20; ++i) {
    std::vector<float> l = {0.0f, 0.5f, 1.0f, 0.2f, -0.3f, 0.9f};
    EXPECT_EQ(s.sample(l, {}), 2);
  }
}

// largest_logits against a full sort (value descending, then id), and
// nothing for a row with a NaN.
TEST(Sampling, LargestLogitsAreTheFirstOfAFullSort) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<float> v(1 + rng() % 500);
    for (float& x : v) {
      const int c = int(rng() % 30);
      x = c == 0 ? INFINITY : c == 1 ? -INFINITY : c == 2 ? -0.0f : float(int(rng() % 11) - 5) * 0.5f;
    }
    const size_t count = 1 + rng() % 70;
    std::vector<int32_t> ids(v.size());
    for (size_t i = 0; i < v.size(); ++i) ids[i] = int32_t(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return v[size_t(a)] > v[size_t(b)]; });
    const auto top = model::largest_logits(v, count);
    ASSERT_EQ(top.size(), std::min(count, v.size())) << "trial " << trial;
    for (size_t i = 0; i < top.size(); ++i) {
      ASSERT_EQ(top[i].id, ids[i]) << "trial " << trial << ", entry " << i;
      ASSERT_EQ(top[i].logit, v[size_t(ids[i])]);
    }
    v[rng() % v.size()] = NAN;
    EXPECT_TRUE(model::largest_logits(v, count).empty());
  }
}

// sample_top on a row's largest top_count logits draws what sample() on the
// whole row draws, token for token with one seed, or declines without a draw
// (then sample() on the row stands in, as generation does). Rows of few
// distinct values (ties, values the division makes equal, infinities) and
// vocabulary-long normal rows; the fallback is taken on some rows and not on
// most.
TEST(Sampling, SampleTopIsSampleOnTheWholeRow) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::vector<float> values = {-INFINITY, -3.0f, -1.0f, -0.0f, 0.0f, 1.0f, 1.49999988f, 1.5f, 2.5f, INFINITY};
  int settled = 0, declined = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool vocab_row = trial % 50 == 0;
    std::vector<float> row(vocab_row ? 151936 : 100 + rng() % 400);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const bool infinities = trial % 5 == 0;
    for (float& l : row)
      l = vocab_row || trial % 3 == 0 ? normal(rng)
          : infinities             ? values[rng() % values.size()]
                                   : values[1 + rng() % (values.size() - 2)];
    model::SamplingParams p;
    p.temperature = trial % 4 == 0 ? 1.0f : trial % 4 == 1 ? 0.7f : trial % 4 == 2 ? 0.8f : 2.0f;
    p.top_k = 1 + int(rng() % model::Sampler::kMaxTopK);
    p.top_p = trial % 2 ? 0.95f : 1.0f;
    p.min_p = trial % 3 ? 0.05f : 0.0f;
    p.seed = rng();
    model::Sampler whole(p), from_top(p);
    const int count = from_top.top_count(int64_t(row.size()));
    ASSERT_EQ(count, p.top_k + model::Sampler::kTopMargin);
    for (int draw = 0; draw < 4; ++draw) {
      std::vector<float> a = row, b = row;
      const int32_t want = whole.sample(a, {});
      const std::optional<int32_t> got = from_top.sample_top(model::largest_logits(row, size_t(count)));
      ++(got ? settled : declined);
      ASSERT_EQ(got ? *got : from_top.sample(b, {}), want) << "trial " << trial << ", draw " << draw;
    }
  }
  EXPECT_GT(settled, 1000);
  EXPECT_GT(declined, 0);
}

// The softmax's exp (top_choice.hpp, computed alike on the host and the
// device): within one binary32 ulp of e^x over the range the candidates'
// x − top takes, exact at 0, zero where e^x is under half the smallest
// binary32, a NaN through.
TEST(Sampling, SamplingExpIsWithinOneUlpOfExp) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> range(-110.0f, 0.0f);
  int exact = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = i < 2000 ? -float(i) * 0.05f : range(rng);
    const float got = model::sampling_exp(x);
    const float want = float(std::exp(double(x)));
    ASSERT_LE(std::fabs(got - want), std::nextafter(want, INFINITY) - want) << "x = " << x;
    exact += got == want;
  }
  EXPECT_GT(exact, 199000);  // a binary64 evaluation, rounded once: nearly always the rounded e^x
  EXPECT_EQ(model::sampling_exp(0.0f), 1.0f);
  EXPECT_EQ(model::sampling_exp(-104.0f), 0.0f);
  EXPECT_EQ(model::sampling_exp(-INFINITY), 0.0f);
  EXPECT_GT(model::sampling_exp(-103.0f), 0.0f);
  EXPECT_TRUE(std::isnan(model::sampling_exp(NAN)));
}

TEST(Sampling, TopCountIsZeroWhereTheWholeRowDecides) {
  const auto count = [](model::SamplingParams p, int64_t vocab) { return model::Sampler(p).top_count(vocab); };
  EXPECT_EQ(count({}, 151936), 40 + model::Sampler::kTopMargin);  // the defaults: top-k 40
  EXPECT_EQ(count({.temperature = 0.0f}, 151936), 0);                // greedy
  EXPECT_EQ(count({.top_k = 0}, 151936), 0);                         // no top-k
  EXPECT_EQ(count({.top_k = model::Sampler::kMaxTopK + 1}, 151936), 0);
  EXPECT_EQ(count({.repeat_penalty = 1.1f}, 151936), 0);             // the penalty needs every id
  EXPECT_EQ(count({}, 48), 0);                                       // top-k + margin reaches the vocabulary
  std::vector<float> row = {1.0f, NAN, 0.0f};
  EXPECT_FALSE(model::Sampler({.top_k = 1}).sample_top(model::largest_logits(row, 2)));  // a NaN: no candidates
}

}  // namespace
}  // namespace trellis
