// The CUDA backend's op profiler (CudaBackendOptions.profile) on the shipped
// 3-bit model: a prompt and a few decode steps give both phases, every op
// kind of the forward (embed, rmsnorm, qk_norm_rope, attention, q, k, v, o,
// add_rmsnorm, gate_up, down, lm_head, to_host; k and v inside q's time when
// the three run as one group) with positive GPU time, forwards
// held by the device-side hold, valid JSON; and profiling changes no logit
// (its eager steps run the kernels the graphs replay).
#include <cstring>
#include <set>
#include <string>

#include "model_cuda_fixture.hpp"

namespace trellis {
namespace {

constexpr int64_t kPrefill = 16, kSteps = 8;

std::vector<float> run(const model::Model& m) {
  const auto ref = test::reference_logits();
  const std::span<const int32_t> tokens(ref.tokens.data(), size_t(kPrefill + kSteps));
  return test::incremental_logits(m, tokens, kPrefill);
}

TEST(CudaProfile, TimesEveryOpOfBothPhasesAndChangesNoLogit) {
  TRELLIS_REQUIRE_GPU();
  const model::Model plain(test::k3BitDir, model::make_cuda_backend());
  const model::Model profiled(test::k3BitDir, model::make_cuda_backend({.profile = true}));
  const auto want = run(plain);
  const auto got = run(profiled);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "profiling changed the logits";

  const auto report = model::cuda_profile(profiled.backend());
  ASSERT_TRUE(report);
  std::printf("%s", report->table.c_str());
  const auto doc = nlohmann::json::parse(report->json);
  const auto& decode = doc["phases"]["decode"];
  const auto& prefill = doc["phases"]["prefill"];
  EXPECT_EQ(prefill["forwards"], 1);
  EXPECT_EQ(prefill["tokens"], kPrefill);
  EXPECT_EQ(decode["forwards"], kSteps);
  EXPECT_GE(decode["held_forwards"].get<int>(), kSteps - 1) << "the hold did not cover the host's queueing";
  std::set<std::string> ops;
  for (const auto& row : decode["by_op"]) {
    ops.insert(row["op"].get<std::string>());
    EXPECT_GT(row["gpu_us_per_forward"].get<double>(), 0) << row["op"];
  }
  // k and v are timed with q when the three run as one group (q's part names them).
  bool qkv_grouped = false;
  for (const auto& row : decode["by_part"])
    qkv_grouped |= row["op"] == "q" && row["part"].get<std::string>().find(" with k, v") != std::string::npos;
  for (const char* op : {"embed", "rmsnorm", "qk_norm_rope", "attention", "q", "o", "add_rmsnorm", "gate_up", "down",
                         "lm_head", "to_host"})
    EXPECT_TRUE(ops.count(op)) << "no decode time for " << op;
  for (const char* op : {"k", "v"}) EXPECT_NE(ops.count(op) == 1, qkv_grouped) << "decode time for " << op;
  // The fused ops took their fused paths (the model is trellis-coded
  // throughout, q/k/v and gate/up sharing their rotations): no separate add,
  // rope or QK-norm; q, k, v and gate/up read the rotated bf16 image their
  // norm wrote; q, k, v's outputs go to qk_norm_rope as bf16; down reads the
  // gate/up output as bf16, and the norms read o's and down's bf16 outputs.
  for (const char* op : {"add", "rope", "qk_norm"}) EXPECT_FALSE(ops.count(op)) << op << " ran unfused";
  double stages = 0;
  int images = 0;
  for (const auto& row : decode["by_part"]) {
    const auto op = row["op"].get<std::string>(), part = row["part"].get<std::string>();
    stages += row["calls_per_forward"].get<double>();
    const bool to_bf16 = part.find("to_bf16") != std::string::npos, to_f32 = part.find("to_f32") != std::string::npos;
    EXPECT_FALSE((op == "q" || op == "k" || op == "v" || op == "gate_up" || op == "down") && to_bf16)
        << op << " converted its own input (" << part << ")";
    EXPECT_FALSE((op == "q" || op == "k" || op == "v" || op == "o" || op == "gate_up" || op == "down") && to_f32)
        << op << " widened its output (" << part << ")";
    if (part.find("rotated bf16 image") != std::string::npos) images += int(row["calls_per_forward"].get<double>());
  }
  // The first input norm, and per layer the post-attention norm and the next input norm (not the final norm: the LM
  // head is dense).
  EXPECT_EQ(images, 2 * plain.arch().layers) << "norms that wrote their reader's input";
  std::printf("decode: %.0f timed stages per forward\n", stages);
  EXPECT_EQ(model::cuda_graph_stats(profiled.backend())->replays, 0);

  model::reset_cuda_profile(profiled.backend());
  const auto empty = nlohmann::json::parse(model::cuda_profile(profiled.backend())->json);
  EXPECT_TRUE(empty["phases"].empty());
  EXPECT_FALSE(model::cuda_profile(plain.backend()));
}

}  // namespace
}  // namespace trellis
