// Clear errors at the model's edges: a directory without tokenizer.json or
// without weights, an unsupported architecture, a prompt longer than the
// context, pipelined decoding's calls out of order, a device this build
// cannot run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "model_files.hpp"
#include "trellis/error.hpp"
#include "trellis/model/device.hpp"
#include "trellis/model/runner.hpp"
#include "trellis/model/session.hpp"

namespace trellis {
namespace {

namespace fs = std::filesystem;

// A copy of the fixture directory (weights linked, not copied) without `skip`,
// its config.json edited by `edit`.
void copy_fixture(const test::TempDir& dir, const std::string& skip, void (*edit)(nlohmann::json&) = nullptr) {
  for (const char* name : {"model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    if (name != skip) fs::create_symlink(test::kFixtureDir / name, dir / name);
  std::ifstream in(test::kFixtureDir / "config.json");
  auto config = nlohmann::json::parse(in);
  if (edit) edit(config);
  test::write_file(dir / "config.json", config.dump());
}

TEST(ModelErrors, MissingTokenizer) {
  const test::TempDir dir;
  copy_fixture(dir, "tokenizer.json");
  test::expect_error([&] { model::Runner r({.dir = dir.path()}); }, {dir.path().string(), "tokenizer.json"});
}

TEST(ModelErrors, MissingWeights) {
  const test::TempDir dir;
  copy_fixture(dir, "model.safetensors");
  test::expect_error([&] { model::Runner r({.dir = dir.path()}); }, {"model.safetensors"});
}

TEST(ModelErrors, UnsupportedArchitectureIsNamed) {
  const test::TempDir dir;
  copy_fixture(dir, "", [](nlohmann::json& c) { c["model_type"] = "gpt_neox"; });
  test::expect_error([&] { model::Model m(dir.path(), model::make_cpu_backend()); },
                     {"unsupported architecture", "gpt_neox", "config.json"});
}

TEST(ModelErrors, UnsupportedRopeTypeIsNamed) {
  const test::TempDir dir;
  copy_fixture(dir, "", [](nlohmann::json& c) { c["rope_parameters"]["rope_type"] = "yarn"; });
  test::expect_error([&] { model::Model m(dir.path(), model::make_cpu_backend()); }, {"rope_type", "yarn"});
}

TEST(ModelErrors, PromptLongerThanTheContext) {
  model::Runner runner({.dir = test::kFixtureDir, .context = 8});
  const auto prompt = runner.encode_prompt("ROMEO:\nI'll tell her my heart, and be in my heart");
  ASSERT_GT(prompt.size(), 8u);
  model::Sampler greedy({.temperature = 0});
  test::expect_error([&] { runner.complete(prompt, 4, greedy, [](std::string_view) {}); },
                     {"prompt is " + std::to_string(prompt.size()) + " tokens", "context of 8"});
}

TEST(ModelErrors, ZeroContext) {
  test::expect_error([&] { model::Session s(test::fixture_model(), 0); }, {"context"});
}

// Pipelined decoding's session calls out of order say what is missing.
TEST(ModelErrors, LaunchedForwardsOutOfOrder) {
  model::Session s(test::fixture_model(), 64);
  const std::vector<int32_t> prompt = {827, 271};
  test::expect_error([&] { s.launch_next(); }, {"launch_next", "earlier launch"});
  test::expect_error([&] { s.take_token(); }, {"take_token", "no launched forward"});
  test::expect_error([&] { s.resample_declined([](std::span<const float>) { return 0; }); },
                     {"resample_declined", "declined"});
  s.launch(prompt);
  test::expect_error([&] { s.resample_declined([](std::span<const float>) { return 0; }); },
                     {"resample_declined", "declined"});
  test::expect_error([&] { s.forward(prompt); }, {"forward", "not taken"});
  test::expect_error([&] { s.rewind(0); }, {"rewind", "not taken"});
  s.take_token();
  s.rewind(0);
  EXPECT_EQ(s.position(), 0);
}

// A CUDA backend either comes up (CUDA build, visible GPU) or the error says
// which of the two is missing.
TEST(ModelErrors, CudaBackendComesUpOrSaysWhyNot) {
  try {
    EXPECT_NE(model::make_backend(model::Device::cuda), nullptr);
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("CUDA backend not built/available") != std::string::npos ||
                what.find("no CUDA device is visible") != std::string::npos)
        << what;
  }
  test::expect_error([] { model::parse_device("tpu"); }, {"tpu"});
}

}  // namespace
}  // namespace trellis
