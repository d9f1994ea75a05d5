// `trellis quantize` refusing bad input: each case is a synthetic checkpoint
// (or flag) broken one way; the run must exit non-zero with one message
// naming the tensor/field and the rule, and leave nothing at the output path
// (no output, no staging directory).
#include <gtest/gtest.h>

#include "quantize_helpers.hpp"

namespace trellis::test {
namespace {

struct QuantizeErrors : ::testing::Test {
  TempDir tmp;
  SyntheticModel model;

  // Writes the model, runs quantize with `flags`, checks the failure.
  void expect_failure(const std::string& flags, std::initializer_list<std::string_view> words, int status = 1) {
    model.write(tmp / "in");
    const Result r = trellis_cli("quantize --in " + shq(tmp / "in") + " --out " + shq(tmp / "out") + " " + flags);
    EXPECT_EQ(r.status, status) << r.output;
    for (auto w : words) EXPECT_NE(r.output.find(w), std::string::npos) << "lacks '" << w << "': " << r.output;
    EXPECT_TRUE(output_traces(tmp / "out").empty()) << r.output;
  }
};

TEST_F(QuantizeErrors, MissingTensor) {
  model.remove("model.layers.0.mlp.gate_proj.weight");
  expect_failure("--bits 3", {"model.layers.0.mlp.gate_proj.weight", "missing"});
}

TEST_F(QuantizeErrors, ExtraTensor) {
  model.tensors.push_back(make_tensor("model.layers.0.mlp.extra_proj.weight", format::DType::BF16, {8},
                                      std::vector<uint16_t>(8, 0)));
  expect_failure("--bits 3", {"model.layers.0.mlp.extra_proj.weight", "unexpected tensor"});
}

TEST_F(QuantizeErrors, UnsupportedDtype) {
  auto* t = model.find("model.layers.0.self_attn.k_proj.weight");
  *t = make_tensor(t->name, format::DType::I16, t->shape, std::vector<int16_t>(128 * 256, 1));
  expect_failure("--bits 3", {"model.layers.0.self_attn.k_proj.weight", "dtype I16", "BF16, F16, F32"});
}

TEST_F(QuantizeErrors, ShapeAgainstConfig) {
  model.config["intermediate_size"] = 768;
  expect_failure("--bits 3", {"model.layers.0.mlp.down_proj.weight", "[256, 768]", "[256, 512]"});
}

TEST_F(QuantizeErrors, CodedAxisNotMultipleOfT) {
  // hidden 320: q/k/v/gate/up are coded along 320 inputs.
  model.config["hidden_size"] = 320;
  model.config["num_attention_heads"] = 5;
  model.config["num_key_value_heads"] = 5;
  model.tensors.clear();
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    model.tensors.push_back(make_tensor(name, format::DType::BF16, shape, gaussian_bf16(n, 7, 0.02f)));
  };
  add("model.embed_tokens.weight", {64, 320});
  add("model.norm.weight", {320});
  add("lm_head.weight", {64, 320});
  const std::string p = "model.layers.0.";
  add(p + "input_layernorm.weight", {320});
  add(p + "post_attention_layernorm.weight", {320});
  for (const char* n : {"q", "k", "v", "o"}) add(p + "self_attn." + n + "_proj.weight", {320, 320});
  add(p + "mlp.gate_proj.weight", {512, 320});
  add(p + "mlp.up_proj.weight", {512, 320});
  add(p + "mlp.down_proj.weight", {320, 512});
  // down_proj (axis 0) is coded along its 320 outputs and is checked first (name order).
  expect_failure("--bits 3", {"model.layers.0.mlp.down_proj.weight", "(320)", "multiple of the group size T = 256"});
}

TEST_F(QuantizeErrors, StoredRowsNotMultipleOf8) {
  // 2 heads of 2: q/k/v are [4, 256], o is [256, 4].
  model.config["head_dim"] = 2;
  model.config["num_attention_heads"] = 2;
  model.config["num_key_value_heads"] = 2;
  auto resize = [&](const std::string& name, std::vector<int64_t> shape) {
    auto* t = model.find(name);
    *t = make_tensor(name, format::DType::BF16, shape, gaussian_bf16(size_t(shape[0] * shape[1]), 3, 0.02f));
  };
  resize("model.layers.0.self_attn.q_proj.weight", {4, 256});
  resize("model.layers.0.self_attn.k_proj.weight", {4, 256});
  resize("model.layers.0.self_attn.v_proj.weight", {4, 256});
  resize("model.layers.0.self_attn.o_proj.weight", {256, 4});
  // Default axes: k_proj [4, 256] on axis 1 has 4 stored rows (o_proj's coded axis of 4 is reached later).
  expect_failure("--bits 3", {"model.layers.0.self_attn.k_proj.weight", "stored rows (4)", "multiple of 8"});
}

TEST_F(QuantizeErrors, UnknownArchitecture) {
  model.config["model_type"] = "mistral";
  expect_failure("--bits 3", {"config.json", "unsupported architecture 'mistral'", "model_type"});
}

TEST_F(QuantizeErrors, AlreadyQuantized) {
  model.config["quantization"] = {{"bits", 2}};
  expect_failure("--bits 3", {"config.json", "already quantized"});
}

TEST_F(QuantizeErrors, BadBits) { expect_failure("--bits 5", {"--bits 5", "2, 3 or 4"}); }

TEST_F(QuantizeErrors, RuleMatchingNothing) {
  expect_failure("--bits 3 --bits-for 'gate_prj=2'", {"--bits-for 'gate_prj=2'", "matches no coded module"});
}

TEST_F(QuantizeErrors, MalformedRule) {
  expect_failure("--bits 3 --axis-for 'down_proj'", {"--axis-for 'down_proj'", "PATTERN=NUMBER"});
}

// Without a GPU (or in a build without CUDA) --device cuda stops before
// anything is read; with one it codes (tests/cuda/viterbi_encoder_test.cpp).
TEST_F(QuantizeErrors, CudaDeviceWithoutGpuOrCudaBuild) {
  if (std::filesystem::exists("/dev/nvidiactl")) GTEST_SKIP() << "a CUDA device is present: --device cuda would run";
  expect_failure("--bits 3 --device cuda", {"--device cuda", "CUDA", "use --device cpu"}, 2);
}

TEST_F(QuantizeErrors, OutputExistsWithoutForce) {
  model.write(tmp / "in");
  std::filesystem::create_directories(tmp / "out");
  write_file(tmp / "out" / "keep.txt", "mine");
  const Result r = trellis_cli("quantize --in " + shq(tmp / "in") + " --out " + shq(tmp / "out") + " --bits 3");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("exists (use --force"), std::string::npos) << r.output;
  EXPECT_EQ(output_traces(tmp / "out"), std::vector<std::string>{"out"});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp / "out"), {}), 1);
}

}  // namespace
}  // namespace trellis::test
