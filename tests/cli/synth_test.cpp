// `trellis synth`, run as a process on the CPU: the tiny preset at 2 bits
// with rotation is written whole (progress lines, no staging directory left),
// `trellis inspect` reads back every projection as a trellis tensor with the
// asked k, L, axis and rotation and the preset's geometry, `trellis run`
// generates from it; with --quantize-head the LM head is a trellis tensor too
// (axis 1, the asked k) and the model still generates; an existing output
// without --force, an unknown preset and bits outside 2..4 are one-line
// errors with exit status 1.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/shell.hpp"
#include "support/temp_dir.hpp"

namespace trellis {
namespace {

using Result = test::ShellResult;

Result trellis_cmd(const std::string& args) {
  return test::run_shell(test::shell_quote(TRELLIS_BIN) + " " + args + " 2>&1");
}

// `trellis synth --like tiny ARGS --out DIR`.
Result synth_tiny(const std::string& args, const std::filesystem::path& out) {
  return trellis_cmd("synth --like tiny " + args + " --out " + test::shell_quote(out));
}

// `trellis inspect DIR --json`, parsed (a failed inspect fails the test).
nlohmann::json inspect_json(const std::filesystem::path& dir) {
  const Result inspect = test::run_shell(test::shell_quote(TRELLIS_BIN) + " inspect " + test::shell_quote(dir) + " --json");
  EXPECT_EQ(inspect.status, 0) << inspect.output;
  return inspect.status == 0 ? nlohmann::json::parse(inspect.output) : nlohmann::json::object();
}

// `trellis run` generates 4 tokens from DIR.
void expect_runs(const std::filesystem::path& dir) {
  const Result run = trellis_cmd("run -m " + test::shell_quote(dir) + " -p ROMEO: -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("generation: 4 tokens"), std::string::npos) << run.output;
}

TEST(Synth, TinyModelInspectsAndRuns) {
  test::TempDir tmp;
  const auto out = tmp / "tiny";
  const Result r = synth_tiny("--bits 2 --L 10 --rotate --seed 7", out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("synth: shard 2/3 (layers 0..1) written"), std::string::npos) << r.output;
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) entries += e.path().filename() != "tiny";
  EXPECT_EQ(entries, 0) << "a staging directory was left behind";

  const auto doc = inspect_json(out);
  ASSERT_TRUE(doc.contains("config") && doc.contains("tensors"));
  EXPECT_EQ(doc["config"]["hidden_size"], 256);
  EXPECT_EQ(doc["config"]["num_hidden_layers"], 2);
  int coded = 0;
  for (const auto& t : doc["tensors"]) {
    const std::string name = t["name"];
    const bool projection = name.find("_proj.weight") != std::string::npos;
    EXPECT_EQ(t["type"] == "trellis", projection) << name;
    if (!projection) continue;
    ++coded;
    const auto& g = t["trellis"];
    EXPECT_EQ(g["k"], 2) << name;
    EXPECT_EQ(g["L"], 10) << name;
    EXPECT_EQ(g["rotation"], "hadamard") << name;
    EXPECT_EQ(g["axis"], name.find("down_proj") != std::string::npos ? 0 : 1) << name;
    if (name.find("gate_proj") != std::string::npos) {
      EXPECT_EQ(g["out_features"], 512);
      EXPECT_EQ(g["in_features"], 256);
    }
  }
  EXPECT_EQ(coded, 14);

  expect_runs(out);
}

TEST(Synth, CodedHeadInspectsAndRuns) {
  test::TempDir tmp;
  const auto out = tmp / "tiny";
  const Result r = synth_tiny("--bits 4 --quantize-head", out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("coded LM head"), std::string::npos) << r.output;
  const auto doc = inspect_json(out);
  ASSERT_TRUE(doc.contains("config") && doc.contains("tensors"));
  int heads = 0, coded = 0;
  for (const auto& t : doc["tensors"]) {
    coded += t["type"] == "trellis";
    if (t["name"] != "lm_head.weight") continue;
    ++heads;
    ASSERT_EQ(t["type"], "trellis");
    EXPECT_EQ(t["trellis"]["k"], 4);
    EXPECT_EQ(t["trellis"]["axis"], 1);
    EXPECT_EQ(t["trellis"]["out_features"], 4096);
    EXPECT_EQ(t["trellis"]["in_features"], 256);
  }
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(coded, 15);
  expect_runs(out);
}

TEST(Synth, Errors) {
  test::TempDir tmp;
  const auto out = test::shell_quote(tmp / "m");
  ASSERT_EQ(trellis_cmd("synth --like tiny --bits 3 --out " + out).status, 0);
  const Result exists = trellis_cmd("synth --like tiny --bits 3 --out " + out);
  EXPECT_EQ(exists.status, 1);
  EXPECT_NE(exists.output.find("trellis: error:"), std::string::npos) << exists.output;
  EXPECT_EQ(trellis_cmd("synth --like tiny --bits 3 --force --out " + out).status, 0);
  const Result unknown = trellis_cmd("synth --like qwen9 --bits 3 --out " + test::shell_quote(tmp / "x"));
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.output.find("unknown model 'qwen9'"), std::string::npos) << unknown.output;
  const Result bits = trellis_cmd("synth --like tiny --bits 5 --out " + test::shell_quote(tmp / "y"));
  EXPECT_EQ(bits.status, 1);
  EXPECT_NE(bits.output.find("--bits must be 2, 3 or 4"), std::string::npos) << bits.output;
}

}  // namespace
}  // namespace trellis
