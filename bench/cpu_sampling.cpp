// The host's token choice over a Qwen3 vocabulary (151936 logits, normal
// with σ = 3, seed 1), each against the standard-library way it replaces,
// whose answer it must give (tests/model/sampling_test.cpp):
//   greedy    trellis::model::argmax against std::max_element;
//   sampling  top_k_candidates at the sampler's defaults (temperature 0.8,
//             top-k 40) against nth_element over every candidate and a sort
//             of the k kept; without top-k (0: every candidate, sorted, with
//             their softmax) against std::sort of the candidates alone; and
//             the sampler without top-k at top-p 0.95, min-p 0.05 (the
//             leading candidates, then the filters) against every candidate
//             sorted, then the filters.
// google-benchmark reports the time per call; decoding pays one call per
// token on the host, between the GPU's forwards.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "trellis/model/sampling.hpp"

namespace {

std::vector<float> vocab_logits() {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<float> v(151936);
  for (float& x : v) x = logit(rng);
  return v;
}

void trellis_argmax(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    benchmark::DoNotOptimize(v.data());
    benchmark::DoNotOptimize(trellis::model::argmax(v));
  }
}

void std_max_element(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    benchmark::DoNotOptimize(v.data());
    benchmark::DoNotOptimize(std::max_element(v.begin(), v.end()));
  }
}

void trellis_top_k(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    benchmark::DoNotOptimize(v.data());
    benchmark::DoNotOptimize(trellis::model::top_k_candidates(v, 0.8f, 40));
  }
}

using trellis::model::Candidate;

bool before(const Candidate& a, const Candidate& b) { return a.prob != b.prob ? a.prob > b.prob : a.id < b.id; }

std::vector<Candidate> scaled(const std::vector<float>& v) {
  std::vector<Candidate> c(v.size());
  for (size_t i = 0; i < c.size(); ++i) c[i] = {int32_t(i), v[i] / 0.8f};
  return c;
}

void std_nth_element_top_k(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    auto c = scaled(v);
    std::nth_element(c.begin(), c.begin() + 39, c.end(), before);
    c.resize(40);
    std::sort(c.begin(), c.end(), before);
    benchmark::DoNotOptimize(c.data());
  }
}

void trellis_no_top_k(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) benchmark::DoNotOptimize(trellis::model::top_k_candidates(v, 0.8f, 0));
}

void std_sort_no_top_k(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    auto c = scaled(v);
    std::sort(c.begin(), c.end(), before);
    benchmark::DoNotOptimize(c.data());
  }
}

// The sampler without top-k at its default top-p 0.95 and min-p 0.05: the
// leading candidates then the filters, against every candidate sorted then
// the filters (the path it replaced; the same tokens: sampling_test.cpp).
void trellis_no_top_k_filtered(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    auto c = trellis::model::leading_candidates(v, 0.8f, 0.95f, 0.05f);
    trellis::model::keep_top_p(c, 0.95f);
    trellis::model::keep_min_p(c, 0.05f);
    benchmark::DoNotOptimize(c.data());
  }
}

void all_sorted_no_top_k_filtered(benchmark::State& state) {
  const auto v = vocab_logits();
  for (auto _ : state) {
    auto c = trellis::model::top_k_candidates(v, 0.8f, 0);
    trellis::model::keep_top_p(c, 0.95f);
    trellis::model::keep_min_p(c, 0.05f);
    benchmark::DoNotOptimize(c.data());
  }
}

}  // namespace

BENCHMARK(trellis_argmax)->Unit(benchmark::kMicrosecond);
BENCHMARK(std_max_element)->Unit(benchmark::kMicrosecond);
BENCHMARK(trellis_top_k)->Unit(benchmark::kMicrosecond);
BENCHMARK(std_nth_element_top_k)->Unit(benchmark::kMicrosecond);
BENCHMARK(trellis_no_top_k)->Unit(benchmark::kMicrosecond);
BENCHMARK(std_sort_no_top_k)->Unit(benchmark::kMicrosecond);
BENCHMARK(trellis_no_top_k_filtered)->Unit(benchmark::kMicrosecond);
BENCHMARK(all_sorted_no_top_k_filtered)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
