// `trellis run`, as a process: a short generation prints its text and one
// stats line and exits 0; a chat answers each stdin line, leaving out its
// oldest turns where the context is full; errors (an unknown
// chat template construct among them) are one line on stderr with exit
// status 1; a sampling parameter outside its range is such an error, and a
// count outside its range fails the parsing with the option and the rule.
// --device cuda generates where a GPU is seen, else it is such an error.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "support/shell.hpp"
#include "model_files.hpp"

namespace trellis {
namespace {

using Result = test::ShellResult;

const std::filesystem::path kFixture = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";

// `trellis run ARGS` with `stdin_text` (printf escapes) on its stdin; stdout and stderr.
Result run(const std::string& args, const std::string& stdin_text = "") {
  const std::string feed = stdin_text.empty() ? "" : "printf '" + stdin_text + "' | ";
  return test::run_shell(feed + test::shell_quote(TRELLIS_BIN) + " run " + args + " 2>&1");
}

int lines(const std::string& s) {
  int n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

TEST(RunCli, GeneratesAndPrintsStats) {
  const Result r = run("-p 'ROMEO:' -n 8 --seed 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("ROMEO:", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("prompt: 2 tokens"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("generation: 8 tokens"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tok/s"), std::string::npos) << r.output;
}

TEST(RunCli, GreedyIsTheReferenceContinuation) {
  const Result r = run("-m '" + kFixture.string() + "' -p 'ROMEO:\n' -n 12 --temp 0");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("ROMEO:\nI'll tell her my heart, and be in my heart", 0), 0u) << r.output;
}

TEST(RunCli, ChatAnswersEveryLine) {
  const Result r = run("--chat -n 4 --seed 1", "Who art thou?\\nSpeak.\\n");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto first = r.output.find("generation: ");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("generation: ", first + 1), std::string::npos) << r.output;
}

// -c 24 holds one short turn and its 4-token reply: each later turn leaves
// the oldest out, and a message longer than the context alone is not sent
// (the turns before it stay) while the chat goes on.
TEST(RunCli, ChatLeavesOutTheOldestTurnsWhenTheContextIsFull) {
  const Result r = run("--chat -c 24 -n 4 --seed 1",
                       "Who art thou?\\nSpeak again, I pray thee, and tell me more, and more, and more, and more, and "
                       "more of it all.\\nAnd more.\\nAnd again.\\n");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto count = [&](const std::string& what) {
    int n = 0;
    for (auto at = r.output.find(what); at != std::string::npos; at = r.output.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("generation: 4 tokens"), 3) << r.output;
  EXPECT_EQ(count("trellis: this message is 38 tokens with the chat template, more than the context of 24 tokens; "
                  "it was not sent\n"),
            1)
      << r.output;
  EXPECT_EQ(count("(the context holds 24 tokens: the oldest turn is left out)\n"), 2) << r.output;
}

TEST(RunCli, UnknownTemplateConstruct) {
  const test::TempDir dir;
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"})
    std::filesystem::create_symlink(kFixture / name, dir / name);
  test::write_file(dir / "tokenizer_config.json",
                   R"({"eos_token": "<|im_end|>", "chat_template": "{% macro m() %}x{% endmacro %}{{ m() }}"})");
  const Result r = run("--chat -m '" + dir.path().string() + "'", "hi\\n");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("trellis: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("macro"), std::string::npos) << r.output;
  EXPECT_EQ(lines(r.output), 1) << r.output;
}

TEST(RunCli, ErrorsAreOneLine) {
  for (const char* args : {"-p x -m /nonexistent-model-dir", "-n 4", "-p 'ROMEO: hello' -c 2"}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("trellis: error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_EQ(lines(r.output), 1) << args << ": " << r.output;
  }
}

// --device cuda runs where a CUDA build sees a GPU; anywhere else it is the
// one-line error that says CUDA is missing.
TEST(RunCli, CudaDeviceRunsOrSaysWhyNot) {
  const Result r = run("-p x -n 2 --temp 0 --device cuda");
  if (r.status == 0) {
    EXPECT_NE(r.output.find("generation: 2 tokens"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("| cuda"), std::string::npos) << r.output;
    return;
  }
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("trellis: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("CUDA"), std::string::npos) << r.output;
  EXPECT_EQ(lines(r.output), 1) << r.output;
}

TEST(RunCli, OptionsOutsideTheirRanges) {
  for (const auto& [args, error] : {
           std::pair{"-p x --top-p 1.5", "trellis: error: sampling: top_p must be in [0, 1] (1: off), got 1.5\n"},
           std::pair{"-p x --repeat-penalty 0",
                     "trellis: error: sampling: repeat_penalty must be a finite number above 0 (1: off), got 0\n"},
       }) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_EQ(r.output, error) << args;
  }
  for (const auto& [args, error] : {std::pair{"-p x -n -3", "--max-tokens: must be 0 or more, got -3\n"},
                                    std::pair{"-p x -n 2x", "--max-tokens: must be an integer, got 2x\n"},
                                    std::pair{"-p x -c 0", "--context: must be 1 or more, got 0\n"},
                                    std::pair{"-p x -t -2", "--threads: must be 1 or more, got -2\n"}}) {
    const Result r = run(args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_EQ(r.output.rfind(error, 0), 0u) << args << ": " << r.output;
  }
}

}  // namespace
}  // namespace trellis
