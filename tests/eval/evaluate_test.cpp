// evaluate() on the fixture model: the bf16 perplexity of the first
// validation window matches transformers (reference.json), a model against
// itself has KLD 0 and the same top-1 everywhere, a perturbed copy has KLD
// > 0 (the same through a log-probs file), and bad input fails clearly.
#include <gtest/gtest.h>

#include <fstream>

#include "model_copies.hpp"
#include "trellis/eval/evaluate.hpp"
#include "trellis/half.hpp"

namespace trellis::eval {
namespace {

using test::kFixtureDir;
using test::kShakespeare;

constexpr int64_t kSmallVocab = 4000;

EvalOptions fixture_run(int64_t context, int64_t max_windows) {
  EvalOptions o;
  o.model_dir = kFixtureDir;
  o.text = kShakespeare;
  o.context = context;
  o.max_windows = max_windows;
  return o;
}

EvalOptions short_run() { return fixture_run(128, 2); }

// A copy of the fixture whose layer-0 MLP down projection is scaled by 1.25.
const std::filesystem::path& perturbed_dir() {
  static test::TempDir dir;
  static const bool made = [] {
    test::copy_fixture(dir.path(), [](test::OwnedTensor& t) {
      if (t.name == "model.layers.0.mlp.down_proj.weight")
        test::for_each_bf16(t, [](uint16_t v) { return float_to_bf16(bf16_to_float(v) * 1.25f); });
    });
    return true;
  }();
  (void)made;
  return dir.path();
}

TEST(Evaluate, FirstValidationWindowMatchesTransformers) {
  const auto r = evaluate(fixture_run(1025, 1));
  const double want = nlohmann::json::parse(std::ifstream(kFixtureDir / "reference.json"))["val_ppl_first_1024"];
  EXPECT_EQ(r.text_begin, 1003854u);
  EXPECT_EQ(r.summary.ppl.predictions, 1024);
  EXPECT_NEAR(r.summary.ppl.ppl, want, 0.01 * want);
  EXPECT_GT(r.summary.ppl.ppl_err, 0);
}

TEST(Evaluate, ModelAgainstItselfHasNoDivergence) {
  EvalOptions o = short_run();
  o.kl_ref_dir = kFixtureDir;
  const auto r = evaluate(o);
  ASSERT_TRUE(r.summary.kl);
  EXPECT_EQ(r.summary.ppl.predictions, 2 * 127);
  EXPECT_EQ(r.summary.kl->mean_kld, 0.0);
  EXPECT_EQ(r.summary.kl->kld_max, 0.0);
  EXPECT_EQ(r.summary.kl->same_top, 1.0);
  EXPECT_EQ(r.summary.kl->delta_ppl, 0.0);
}

TEST(Evaluate, PerturbedCopyDivergesTheSameThroughALogProbsFile) {
  test::TempDir tmp;
  EvalOptions ref = short_run();
  ref.save_logits = tmp / "ref.safetensors";
  const auto base = evaluate(ref);

  EvalOptions live = short_run();
  live.model_dir = perturbed_dir();
  live.kl_ref_dir = kFixtureDir;
  const auto a = evaluate(live);
  ASSERT_TRUE(a.summary.kl);
  EXPECT_GT(a.summary.kl->mean_kld, 1e-4);
  EXPECT_GT(a.summary.kl->kld_p99, a.summary.kl->kld_p90);
  EXPECT_LT(a.summary.kl->same_top, 1.0);
  EXPECT_DOUBLE_EQ(a.summary.kl->ref.ppl, base.summary.ppl.ppl);

  EvalOptions cached = live;
  cached.kl_ref_dir.clear();
  cached.kl_ref_logits = ref.save_logits;
  const auto b = evaluate(cached);
  EXPECT_DOUBLE_EQ(b.summary.kl->mean_kld, a.summary.kl->mean_kld);
  EXPECT_DOUBLE_EQ(b.summary.kl->same_top, a.summary.kl->same_top);

  // f16 log-probs: nearly the same divergence in half the bytes.
  ref.save_logits = tmp / "ref16.safetensors";
  ref.save_dtype = format::DType::F16;
  evaluate(ref);
  cached.kl_ref_logits = ref.save_logits;
  const auto c = evaluate(cached);
  EXPECT_NEAR(c.summary.kl->mean_kld, a.summary.kl->mean_kld, 0.02 * a.summary.kl->mean_kld + 1e-4);
}

TEST(Evaluate, LogProbsFileOfOtherWindowsIsRejected) {
  test::TempDir tmp;
  EvalOptions ref = short_run();
  ref.save_logits = tmp / "ref.safetensors";
  evaluate(ref);
  EvalOptions o = short_run();
  o.kl_ref_logits = ref.save_logits;
  o.context = 64;
  test::expect_error([&] { evaluate(o); }, {"ref.safetensors", "windows of 128 tokens"});
  o.context = 128;
  o.max_windows = 3;
  test::expect_error([&] { evaluate(o); }, {"holds 2 windows", "needs 3"});
  o.max_windows = 2;
  o.split = Split::train;
  test::expect_error([&] { evaluate(o); }, {"other tokens"});
}

TEST(Evaluate, ReferenceWithAnotherVocabularyIsRejected) {
  test::TempDir dir;
  test::copy_fixture(
      dir.path(),
      [](test::OwnedTensor& t) {
        if (t.name == "model.embed_tokens.weight" || t.name == "lm_head.weight") {
          t.data.resize(size_t(kSmallVocab * t.shape[1] * 2));
          t.shape[0] = kSmallVocab;
        }
      },
      [](nlohmann::json& c) { c["vocab_size"] = kSmallVocab; });
  EvalOptions o = short_run();
  o.kl_ref_dir = dir.path();
  test::expect_error([&] { evaluate(o); }, {"vocabulary is 4000 tokens", "4096"});
}

TEST(Evaluate, BadInput) {
  test::TempDir tmp;
  EvalOptions o = short_run();
  o.text = tmp / "empty.txt";
  test::write_file(o.text, "");
  test::expect_error([&] { evaluate(o); }, {"empty.txt", "empty"});
  o.text = tmp / "short.txt";
  o.split = Split::all;
  test::write_file(o.text, "ROMEO: hi");
  test::expect_error([&] { evaluate(o); }, {"fewer than one window of 128"});
  o.context = 1;
  test::expect_error([&] { evaluate(o); }, {"at least 2 tokens"});
  o = short_run();
  o.text = tmp / "missing.txt";
  test::expect_error([&] { evaluate(o); }, {"missing.txt"});
  o = short_run();
  o.model_dir = tmp / "nomodel";
  test::expect_error([&] { evaluate(o); }, {"nomodel", "not found"});
  o = short_run();
  o.kl_ref_dir = kFixtureDir;
  o.kl_ref_logits = tmp / "x.safetensors";
  test::expect_error([&] { evaluate(o); }, {"one reference"});
  o.kl_ref_dir.clear();
  test::expect_error([&] { evaluate(o); }, {"x.safetensors"});
}

}  // namespace
}  // namespace trellis::eval
