// The "quantization" object of config.json (SPEC §1): entries, top-level
// defaults, the quantization_config alias, and every rejected value (unknown
// mode/code/rotation, k/L/T/axis out of range), each message naming the
// module and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_files.hpp"
#include "trellis/format/model_config.hpp"

namespace trellis::format {
namespace {

using nlohmann::json;
using test::expect_error;

constexpr const char* kGate = "model.layers.0.mlp.gate_proj";

json entry(int k = 3, int L = 12, int T = 256, int axis = 1) {
  return {{"mode", "trellis"}, {"bits", k}, {"group_size", T},
          {"trellis", {{"L", L}, {"code", "1mad"}, {"axis", axis}}}};
}

json config_with(const json& quantization, const char* key = "quantization") {
  json j = {{"model_type", "qwen3"}, {"hidden_size", 512},        {"intermediate_size", 1280},
            {"num_hidden_layers", 4}, {"num_attention_heads", 8}, {"vocab_size", 4096}};
  j[key] = quantization;
  return j;
}

QuantizationConfig parse(const json& q, const char* key = "quantization") {
  return parse_model_config(config_with(q, key).dump(), "config.json").quantization;
}

void expect_rejected(const json& q, std::initializer_list<std::string_view> words) {
  expect_error([&] { parse(q); }, words);
}

TEST(Quantization, ReadsEntries) {
  json e = entry(2, 16, 256, 0);
  e["rotation"] = "hadamard";
  const auto q = parse({{kGate, entry()}, {"model.layers.0.mlp.down_proj", e}});
  ASSERT_EQ(q.modules.size(), 2u);
  const TrellisParams* g = q.find(kGate);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->k, 3);
  EXPECT_EQ(g->L, 12);
  EXPECT_EQ(g->T, 256);
  EXPECT_EQ(g->axis, 1);
  EXPECT_EQ(g->rotation, Rotation::none);
  const TrellisParams* d = q.find("model.layers.0.mlp.down_proj");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->k, 2);
  EXPECT_EQ(d->L, 16);
  EXPECT_EQ(d->axis, 0);
  EXPECT_EQ(d->rotation, Rotation::hadamard);
  EXPECT_EQ(q.find("model.layers.0.mlp.up_proj"), nullptr);
}

TEST(Quantization, TopLevelValuesAreDefaults) {
  const json bare = {{"trellis", {{"L", 12}, {"code", "1mad"}, {"axis", 1}}}};
  json own = bare;
  own["bits"] = 4;
  const auto q = parse({{"mode", "trellis"}, {"bits", 2}, {"group_size", 128}, {kGate, bare}, {"m.up", own}});
  EXPECT_EQ(q.default_bits, 2);
  EXPECT_EQ(q.default_group_size, 128);
  EXPECT_EQ(q.find(kGate)->k, 2);
  EXPECT_EQ(q.find(kGate)->T, 128);
  EXPECT_EQ(q.find("m.up")->k, 4);
  expect_rejected({{kGate, bare}}, {kGate, "no 'mode'"});
  expect_rejected({{"mode", "trellis"}, {kGate, bare}}, {kGate, "no 'bits'"});
  expect_rejected({{"mode", "trellis"}, {"bits", 2}, {kGate, bare}}, {kGate, "no 'group_size'"});
}

TEST(Quantization, AcceptsTheQuantizationConfigAlias) {
  EXPECT_EQ(parse({{kGate, entry()}}, "quantization_config").find(kGate)->k, 3);
  json j = config_with({{kGate, entry()}});
  j["quantization_config"] = j["quantization"];  // mlx-style: both, identical
  EXPECT_EQ(parse_model_config(j.dump(), "config.json").quantization.modules.size(), 1u);
  j["quantization_config"] = {{kGate, entry(2)}};
  expect_error([&] { parse_model_config(j.dump(), "config.json"); }, {"quantization_config", "differ"});
}

TEST(Quantization, RejectsUnknownModeCodeAndRotation) {
  json e = entry();
  e["mode"] = "affine";
  expect_rejected({{kGate, e}}, {kGate, "unknown mode 'affine'"});
  expect_rejected({{"mode", "mxfp4"}}, {"quantization", "unknown mode 'mxfp4'"});
  e = entry();
  e["trellis"]["code"] = "3inst";
  expect_rejected({{kGate, e}}, {kGate, "unknown code '3inst'"});
  e = entry();
  e["rotation"] = "random";
  expect_rejected({{kGate, e}}, {kGate, "unknown rotation 'random'"});
}

TEST(Quantization, RejectsBitsOutOfRange) {
  expect_rejected({{kGate, entry(0)}}, {kGate, "bits k=0", "1 <= k <= 8"});
  expect_rejected({{kGate, entry(9, 12)}}, {kGate, "bits k=9"});
  expect_rejected({{kGate, entry(-3)}}, {kGate, "bits k=-3"});
}

TEST(Quantization, RejectsStateBitsOutOfRange) {
  expect_rejected({{kGate, entry(3, 3)}}, {kGate, "trellis.L=3", "k < L <= 16"});
  expect_rejected({{kGate, entry(3, 17)}}, {kGate, "trellis.L=17"});
  EXPECT_EQ(parse({{kGate, entry(8, 16)}}).find(kGate)->L, 16);
  EXPECT_EQ(parse({{kGate, entry(1, 2)}}).find(kGate)->k, 1);
}

TEST(Quantization, RejectsGroupSizeNotAMultipleOf32) {
  expect_rejected({{kGate, entry(3, 12, 100)}}, {kGate, "group_size T=100", "multiple of 32"});
  expect_rejected({{kGate, entry(3, 12, 0)}}, {kGate, "group_size T=0"});
  json e = entry(3, 12, 96);
  EXPECT_EQ(parse({{kGate, e}}).find(kGate)->T, 96);
  e["rotation"] = "hadamard";
  expect_rejected({{kGate, e}}, {kGate, "hadamard", "power of two"});
}

TEST(Quantization, RejectsAxisAndStructure) {
  expect_rejected({{kGate, entry(3, 12, 256, 2)}}, {kGate, "trellis.axis=2", "0 or 1"});
  json e = entry();
  e.erase("trellis");
  expect_rejected({{kGate, e}}, {kGate, "'trellis' must be an object"});
  e = entry();
  e["trellis"].erase("L");
  expect_rejected({{kGate, e}}, {kGate, "needs 'L'"});
  e = entry();
  e["bits"] = "3";
  expect_rejected({{kGate, e}}, {kGate, "'bits'", "integer"});
  e = entry();
  e["rotaton"] = "hadamard";
  expect_rejected({{kGate, e}}, {kGate, "unknown field 'rotaton'"});
  expect_rejected({{kGate, 3}}, {kGate, "module entry object"});
  expect_rejected(json::array(), {"quantization", "object"});
}

}  // namespace
}  // namespace trellis::format
