// Loading tokenizer files: what cannot be honoured fails with an Error that
// names it; added-token options; config variants (token objects, template
// lists, eos lists, chat_template.jinja).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trellis/error.hpp"
#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::tokenizer {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kModelDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json fixture_json() {
  static const json j = json::parse(read(kModelDir / "tokenizer.json"));
  return j;
}

// The Error message of loading the fixture with `patch` merged in.
std::string load_error(const json& patch) {
  json t = fixture_json();
  t.merge_patch(patch);
  try {
    Tokenizer::from_json(t.dump());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerLoader, NamesWhatItCannotHonour) {
  EXPECT_NE(load_error({{"normalizer", {{"type", "Lowercase"}}}}).find("normalizer 'Lowercase' is not supported"),
            std::string::npos);
  EXPECT_NE(load_error({{"pre_tokenizer", {{"type", "Whitespace"}}}}).find("pre-tokenizer 'Whitespace'"),
            std::string::npos);
  EXPECT_NE(load_error({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", " "}}}, {"behavior", "Contiguous"}}}})
                .find("Split behavior 'Contiguous'"),
            std::string::npos);
  EXPECT_NE(load_error({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", " "}}}}}}).find("no ByteLevel"),
            std::string::npos);
  EXPECT_NE(load_error({{"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", false}}}, {"decoder", {{"type", "Metaspace"}}}})
                .find("decoder 'Metaspace'"),
            std::string::npos);
  EXPECT_NE(load_error({{"model", {{"type", "WordPiece"}}}}).find("model type 'WordPiece'"), std::string::npos);
  EXPECT_NE(load_error({{"model", {{"byte_fallback", true}}}}).find("'byte_fallback'"), std::string::npos);
  EXPECT_NE(load_error({{"model", {{"merges", {"x yz"}}}}}).find("not in the vocabulary"), std::string::npos);
  EXPECT_NE(load_error({{"model", {{"merges", {"a b c"}}}}}).find("not two tokens"), std::string::npos);
  EXPECT_NE(load_error({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}}}}).find("(unclosed"),
            std::string::npos);
  json added = fixture_json()["added_tokens"];
  added[0]["single_word"] = true;
  EXPECT_NE(load_error({{"added_tokens", added}}).find("single_word"), std::string::npos);
  EXPECT_THROW(Tokenizer::from_json("{not json"), Error);
  EXPECT_THROW(Tokenizer::from_json(fixture_json().dump(), R"({"eos_token": "<|nope|>"})"), Error);
}

TEST(TokenizerLoader, AddedTokenOptions) {
  json t = fixture_json();
  t["added_tokens"].push_back({{"id", 4096}, {"content", "<mask>"}, {"special", false}, {"lstrip", true},
                               {"rstrip", true}, {"normalized", false}, {"single_word", false}});
  const Tokenizer tok = Tokenizer::from_json(t.dump());
  EXPECT_EQ(tok.vocab_size(), 4097);
  EXPECT_FALSE(tok.is_special(4096));
  // lstrip/rstrip swallow the spaces around it; not special, so it is
  // matched even when special tokens are not allowed.
  const auto ids = tok.encode("a  <mask>  b", /*allow_special=*/false);
  EXPECT_EQ(ids, (std::vector<int32_t>{tok.encode("a")[0], 4096, tok.encode("b")[0]}));
  EXPECT_EQ(tok.decode(ids), "a<mask>b");
  // Longest match first: "<|im_end|>" beats a shorter overlapping token.
  t["added_tokens"].push_back({{"id", 4097}, {"content", "<|im"}, {"special", true}});
  const Tokenizer longest = Tokenizer::from_json(t.dump());
  EXPECT_EQ(longest.encode("<|im_end|><|im"), (std::vector<int32_t>{2, 4097}));
}

TEST(TokenizerLoader, ConfigVariants) {
  const std::string config = R"({
    "bos_token": {"content": "<|endoftext|>", "lstrip": false},
    "eos_token": {"content": "<|im_end|>"},
    "add_bos_token": true,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})";
  const Tokenizer t = Tokenizer::from_json(fixture_json().dump(), config, R"({"eos_token_id": [2, 0]})");
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.bos_token(), "<|endoftext|>");
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{2, 0}));
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.chat_template(), "D");
  EXPECT_THROW(Tokenizer::from_json(fixture_json().dump(), R"({"chat_template": [{"name": "x", "template": "T"}]})"),
               Error);
}

TEST(TokenizerLoader, ChatTemplateFileWins) {
  const fs::path dir = fs::temp_directory_path() / ("trellis_tok_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(kModelDir / f, dir / f, fs::copy_options::overwrite_existing);
  std::ofstream(dir / "chat_template.jinja") << "{{ messages | length }}";
  const Tokenizer t = Tokenizer::from_dir(dir);
  EXPECT_EQ(t.chat_template(), "{{ messages | length }}");
  EXPECT_TRUE(t.eos_ids() == std::vector<int32_t>{2});  // no generation_config.json: from tokenizer_config
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trellis::tokenizer
