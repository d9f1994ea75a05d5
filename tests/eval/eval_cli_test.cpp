// `trellis eval`, as a process: the llama-perplexity lines, --json on
// stdout, and errors as one line with exit status 1.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/shell.hpp"
#include "model_copies.hpp"

namespace trellis {
namespace {

using Result = test::ShellResult;

// `trellis eval ARGS`; stderr joins stdout unless `quiet`.
Result eval(const std::string& args, bool quiet = false) {
  return test::run_shell(test::shell_quote(TRELLIS_BIN) + " eval " + args + (quiet ? " 2>/dev/null" : " 2>&1"));
}

const std::string kArgs =
    "-m '" + test::kFixtureDir.string() + "' --ppl '" + test::kShakespeare.string() + "' -c 64 --max-windows 2";

TEST(EvalCli, PrintsTheFinalEstimate) {
  const Result r = eval(kArgs + " --kl-ref '" + test::kFixtureDir.string() + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Final estimate: PPL = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Mean    KLD: 0.000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Same top p: 100.000"), std::string::npos) << r.output;
}

TEST(EvalCli, Json) {
  const Result r = eval(kArgs + " --json", /*quiet=*/true);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["predictions"], 126);
  EXPECT_EQ(j["windows"], 2);
  EXPECT_EQ(j["text_bytes"][0], 1003854);
  EXPECT_GT(j["ppl"].get<double>(), 1.0);
  EXPECT_FALSE(j.contains("kl"));
}

TEST(EvalCli, ErrorsAreOneLine) {
  test::TempDir tmp;
  test::write_file(tmp / "empty.txt", "");
  const Result r = eval("-m '" + test::kFixtureDir.string() + "' --ppl '" + (tmp / "empty.txt").string() + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output.rfind("trellis: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("empty"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
}

}  // namespace
}  // namespace trellis
