// `trellis inspect`, run as a process: the fixture model (15,209,472 bf16
// parameters) as a table and as JSON, a small trellis model's geometry and
// bits per weight, and errors as one line with exit status 1.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/shell.hpp"
#include "../format/test_model.hpp"

namespace trellis {
namespace {

const std::string kFixture = std::string(TRELLIS_SOURCE_DIR) + "/models/shakespeare-qwen3-15m";

using Result = test::ShellResult;

// `trellis inspect ARGS`, stdout and stderr.
Result inspect(const std::string& args) {
  return test::run_shell(test::shell_quote(TRELLIS_BIN) + " inspect " + args + " 2>&1");
}

std::string sh_quote(const std::filesystem::path& p) { return test::shell_quote(p); }

TEST(Inspect, FixtureTable) {
  const Result r = inspect(sh_quote(kFixture));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("parameters  15209472"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bf16           47 tensors, 15209472 parameters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model.layers.0.mlp.down_proj.weight"), std::string::npos);
  EXPECT_EQ(r.output.find("trellis k="), std::string::npos);
  EXPECT_NE(r.output.find("coded       none"), std::string::npos);
}

TEST(Inspect, FixtureJson) {
  const Result r = inspect(sh_quote(kFixture) + " --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["totals"]["parameters"], 15209472);
  EXPECT_EQ(doc["totals"]["bytes"], 30418944);
  EXPECT_EQ(doc["totals"]["by_type"].size(), 1u);
  EXPECT_EQ(doc["totals"]["by_type"]["bf16"]["parameters"], 15209472);
  EXPECT_EQ(doc["tensors"].size(), 47u);
  for (const auto& t : doc["tensors"]) EXPECT_EQ(t["type"], "bf16") << t["name"];
  EXPECT_EQ(doc["config"]["model_type"], "qwen3");
  EXPECT_EQ(doc["config"]["rope_theta"], 10000.0);
}

TEST(Inspect, TrellisModel) {
  test::TempDir dir;
  test::write_small_model(dir.path());
  const Result table = inspect(sh_quote(dir.path()));
  ASSERT_EQ(table.status, 0) << table.output;
  for (const char* want : {"trellis k=2 L=12 T=256 axis=1 ", "trellis k=3 L=12 T=256 axis=0 k3-interleaved",
                           "trellis k=4 L=16 T=256 axis=1 hadamard", "[512, 256]",
                           "parameters  " /* total below */})
    EXPECT_NE(table.output.find(want), std::string::npos) << want << "\n" << table.output;
  EXPECT_NE(table.output.find(std::to_string(test::SmallModel::kParameters)), std::string::npos);
  EXPECT_EQ(table.output.find(".scales"), std::string::npos);  // folded into their layers

  const Result json = inspect(sh_quote(dir.path()) + " --json");
  ASSERT_EQ(json.status, 0) << json.output;
  const auto doc = nlohmann::json::parse(json.output);
  const auto& coded = doc["totals"]["coded"];
  EXPECT_EQ(coded["tensors"], 3);
  EXPECT_EQ(coded["parameters"], test::SmallModel::kCodedParameters);
  EXPECT_EQ(coded["bytes"], test::SmallModel::kCodedBytes);
  EXPECT_DOUBLE_EQ(coded["bits_per_weight"].get<double>(),
                   8.0 * double(test::SmallModel::kCodedBytes) / double(test::SmallModel::kCodedParameters));
  EXPECT_EQ(doc["totals"]["parameters"], test::SmallModel::kParameters);
  bool found = false;
  for (const auto& t : doc["tensors"])
    if (t["name"] == "model.layers.0.mlp.down_proj.weight") {
      found = true;
      EXPECT_EQ(t["type"], "trellis");
      EXPECT_EQ(t["trellis"]["block_interleave"], 2);
      EXPECT_EQ(t["trellis"]["in_features"], 256);
      EXPECT_EQ(t["trellis"]["out_features"], 512);
    }
  EXPECT_TRUE(found);
}

TEST(Inspect, ErrorsAreOneLineAndExitOne) {
  const Result missing = inspect("/nonexistent-trellis-model");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.output, "trellis: error: /nonexistent-trellis-model: not a model directory\n");

  test::TempDir dir;
  auto config = test::small_model_config();
  config["quantization"]["model.layers.0.mlp.gate_proj"]["trellis"]["code"] = "3inst";
  test::write_small_model(dir.path(), config);
  const Result bad = inspect(sh_quote(dir.path()));
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.output.rfind("trellis: error: ", 0), 0u) << bad.output;
  EXPECT_NE(bad.output.find("unknown code '3inst'"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find('\n'), bad.output.size() - 1) << bad.output;
}

}  // namespace
}  // namespace trellis
