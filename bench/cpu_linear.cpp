// CPU trellis linear (trellis::cpu::trellis_linear_f32, Numerics::f32, what
// the CPU model backend calls) at the shipped model's shapes, k = 3, L = 12,
// T = 256: q/o 512×512, k/v 256×512, gate/up 1280×512 (axis 1), down
// 512×1280 (axis 0), lm_head 4096×512; M = 1 (decode) and M = 64 (prefill).
// Random codes and scales; threads = 1 and 2. google-benchmark reports time
// per call and weights/s (counter "Wps").
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/cpu/threads.hpp"
#include "trellis/geometry.hpp"

namespace {

using namespace trellis;

void linear(benchmark::State& state, int axis, int64_t out, int64_t in) {
  const int64_t M = state.range(0);
  cpu::set_thread_count(int(state.range(1)));
  std::mt19937_64 rng(1);
  const auto t = test::random_trellis(rng, make_geometry(3, 12, 256, axis, out, in));
  const auto x = test::random_bf16(rng, size_t(M * in));
  std::vector<float> y(size_t(M * out));
  for (auto _ : state) {
    cpu::trellis_linear_f32(t.view(), Numerics::f32, x.data(), M, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["Wps"] = benchmark::Counter(double(out * in), benchmark::Counter::kIsIterationInvariantRate);
  cpu::set_thread_count(0);
}

void args(benchmark::internal::Benchmark* b) {
  for (int64_t M : {1, 64})
    for (int64_t threads : {1, 2}) b->Args({M, threads});
  b->ArgNames({"M", "threads"});
}

BENCHMARK_CAPTURE(linear, q_512x512, 1, 512, 512)->Apply(args)->UseRealTime();
BENCHMARK_CAPTURE(linear, kv_256x512, 1, 256, 512)->Apply(args)->UseRealTime();
BENCHMARK_CAPTURE(linear, gate_1280x512, 1, 1280, 512)->Apply(args)->UseRealTime();
BENCHMARK_CAPTURE(linear, down_512x1280, 0, 512, 1280)->Apply(args)->UseRealTime();
BENCHMARK_CAPTURE(linear, lm_head_4096x512, 1, 4096, 512)->Apply(args)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
