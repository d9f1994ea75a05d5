// Greedy sampling's argmax over a Qwen3 vocabulary (151936 logits, normal
// with σ = 3, seed 1): trellis::model::argmax against std::max_element, whose
// answer it must give (tests/model/sampling_test.cpp). google-benchmark
// reports the time per call; decoding pays one call per token on the host,
// between the GPU's forwards.
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

}  // namespace

BENCHMARK(trellis_argmax)->Unit(benchmark::kMicrosecond);
BENCHMARK(std_max_element)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
