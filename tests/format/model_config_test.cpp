// config.json: the fixture's fields, rope theta from either place, defaults,
// and rejected fields naming the field and the rule.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_files.hpp"
#include "trellis/format/model_config.hpp"

namespace trellis::format {
namespace {

using nlohmann::json;
using test::expect_error;

json base() {
  return {{"model_type", "qwen3"}, {"hidden_size", 512},        {"intermediate_size", 1280},
          {"num_hidden_layers", 4}, {"num_attention_heads", 8}, {"vocab_size", 4096}};
}

ModelConfig parse(const json& j) { return parse_model_config(j.dump(), "config.json"); }

void expect_rejected(const json& j, std::initializer_list<std::string_view> words) {
  expect_error([&] { parse(j); }, words);
}

TEST(ModelConfig, ReadsTheFixture) {
  const auto c = load_model_config(std::filesystem::path(TRELLIS_SOURCE_DIR) / "models/shakespeare-qwen3-15m/config.json");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Qwen3ForCausalLM"});
  EXPECT_EQ(c.hidden_size, 512);
  EXPECT_EQ(c.intermediate_size, 1280);
  EXPECT_EQ(c.num_hidden_layers, 4);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab_size, 4096);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);  // from rope_parameters
  EXPECT_EQ(c.rope_type, "default");
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_TRUE(c.quantization.modules.empty());
}

TEST(ModelConfig, ReadsRopeThetaFromEitherPlace) {
  json top = base();
  top["rope_theta"] = 1000000.0;
  EXPECT_DOUBLE_EQ(parse(top).rope_theta, 1e6);
  json nested = base();
  nested["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}};
  EXPECT_DOUBLE_EQ(parse(nested).rope_theta, 5e5);
  EXPECT_EQ(parse(nested).rope_type, "llama3");
  json both = nested;
  both["rope_theta"] = 500000;
  EXPECT_DOUBLE_EQ(parse(both).rope_theta, 5e5);
  both["rope_theta"] = 10000;
  expect_rejected(both, {"config.json", "rope_theta", "disagree"});
  EXPECT_DOUBLE_EQ(parse(base()).rope_theta, 10000.0);
  json bad = base();
  bad["rope_parameters"] = {{"rope_theta", "big"}};
  expect_rejected(bad, {"rope_parameters", "'rope_theta'", "number"});
}

TEST(ModelConfig, AppliesDefaults) {
  const auto c = parse(base());
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_FALSE(c.max_position_embeddings.has_value());
  EXPECT_TRUE(c.eos_token_ids.empty());
  json j = base();
  j["eos_token_id"] = {1, 7};
  j["bos_token_id"] = 0;
  j["tie_word_embeddings"] = true;
  j["head_dim"] = 128;
  const auto d = parse(j);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(d.bos_token_id, 0);
  EXPECT_TRUE(d.tie_word_embeddings);
  EXPECT_EQ(d.head_dim, 128);
}

TEST(ModelConfig, RejectsMissingAndMistypedFields) {
  json j = base();
  j.erase("hidden_size");
  expect_rejected(j, {"config.json", "'hidden_size'", "missing"});
  j = {{"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12}, {"vocab_size", 50257}};
  expect_rejected(j, {"config.json: missing required field 'hidden_size' (model_type 'gpt2')"});
  j = base();
  j["vocab_size"] = "4096";
  expect_rejected(j, {"'vocab_size'", "integer"});
  j = base();
  j["num_hidden_layers"] = 0;
  expect_rejected(j, {"'num_hidden_layers'", "positive"});
  j = base();
  j["tie_word_embeddings"] = 1;
  expect_rejected(j, {"'tie_word_embeddings'", "true or false"});
  j = base();
  j["eos_token_id"] = {1, "x"};
  expect_rejected(j, {"'eos_token_id'", "non-integer"});
  j = base();
  j.erase("model_type");
  expect_rejected(j, {"'model_type'"});
  expect_error([] { parse_model_config("[1]", "config.json"); }, {"config.json", "object"});
  expect_error([] { parse_model_config("{", "config.json"); }, {"config.json", "not valid JSON"});
}

TEST(ModelConfig, RejectsDeeplyNestedJson) {
  const std::string deep = R"({"model_type":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error([&] { parse_model_config(deep, "config.json"); }, {"config.json", "nested deeper than 64"});
}

TEST(ModelConfig, RejectsInconsistentHeads) {
  json j = base();
  j["num_key_value_heads"] = 3;
  expect_rejected(j, {"num_key_value_heads 3", "does not divide"});
  j = base();
  j["num_attention_heads"] = 7;
  expect_rejected(j, {"no head_dim", "does not divide hidden_size"});
}

}  // namespace
}  // namespace trellis::format
