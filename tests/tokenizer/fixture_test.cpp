// The tokenizer on the repo's fixture model (shakespeare-qwen3-15m): the
// reference prompt ids, a lossless round trip over all of tinyshakespeare,
// the special tokens, the config-derived ids, and streaming decode of
// characters split across tokens.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trellis/error.hpp"
#include "trellis/tokenizer/stream_decoder.hpp"
#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::tokenizer {
namespace {

const std::string kModelDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const Tokenizer& fixture() {
  static const Tokenizer t = Tokenizer::from_dir(kModelDir);
  return t;
}

TEST(FixtureTokenizer, EncodesReferencePrompt) {
  const auto ref = nlohmann::json::parse(read(kModelDir + "/reference.json"));
  EXPECT_EQ(fixture().encode("ROMEO:\n"), (std::vector<int32_t>{827, 271}));
  EXPECT_EQ(fixture().encode(ref.at("prompt").get<std::string>()), ref.at("prompt_ids").get<std::vector<int32_t>>());
  const auto greedy = ref.at("greedy_ids").get<std::vector<int32_t>>();
  EXPECT_EQ(fixture().decode(fixture().encode(fixture().decode(greedy))), fixture().decode(greedy));
}

TEST(FixtureTokenizer, RoundTripsAllOfTinyShakespeare) {
  const std::string text = read(TRELLIS_SOURCE_DIR "/data/tinyshakespeare.txt");
  ASSERT_GT(text.size(), 1000000u);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = fixture().encode(text);
  const std::string back = fixture().decode(ids);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("tinyshakespeare: %zu bytes -> %zu tokens, encode+decode %.2f s\n", text.size(), ids.size(), seconds);
  EXPECT_EQ(back, text);
  EXPECT_LT(ids.size(), text.size() / 2);  // the BPE merges do compress
}

TEST(FixtureTokenizer, SpecialTokens) {
  const Tokenizer& t = fixture();
  EXPECT_EQ(t.id("<|endoftext|>"), 0);
  EXPECT_EQ(t.id("<|im_start|>"), 1);
  EXPECT_EQ(t.id("<|im_end|>"), 2);
  for (int32_t id : {0, 1, 2}) EXPECT_TRUE(t.is_special(id));
  EXPECT_FALSE(t.is_special(827));
  EXPECT_EQ(t.encode("<|endoftext|>"), (std::vector<int32_t>{0}));

  const std::string chat = "<|im_start|>user\nhi<|im_end|>";
  const auto ids = t.encode(chat);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(t.decode(ids), chat);
  EXPECT_EQ(t.decode(ids, /*skip_special=*/true), "user\nhi");

  // Not allowed: the markers are plain text, split into ordinary tokens.
  const auto plain = t.encode(chat, /*allow_special=*/false);
  for (int32_t id : plain) EXPECT_FALSE(t.is_special(id)) << id;
  EXPECT_EQ(t.decode(plain), chat);
}

TEST(FixtureTokenizer, ConfigIdsAndTemplate) {
  const Tokenizer& t = fixture();
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{2}));
  EXPECT_EQ(t.eos_token(), "<|im_end|>");
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_FALSE(t.bos_token().has_value());
  EXPECT_FALSE(t.add_bos());
  ASSERT_TRUE(t.chat_template().has_value());
  EXPECT_NE(t.chat_template()->find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(t.vocab_size(), 4096);
  EXPECT_EQ(t.token(827), "ROMEO");
  EXPECT_EQ(t.token_bytes(t.encode(" the").at(0)), " the");
}

TEST(FixtureTokenizer, StreamingHoldsBackSplitCharacters) {
  const Tokenizer& t = fixture();
  // The fixture knows no emoji or CJK merges: each such character is several
  // byte tokens, so a character's bytes arrive across tokens.
  const std::string text = "Hi \xF0\x9F\x98\x80 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC!";  // Hi 😀 café 日本!
  const auto emoji = t.encode("\xF0\x9F\x98\x80");
  ASSERT_EQ(emoji.size(), 4u);
  StreamDecoder one(t);
  EXPECT_EQ(one.push(emoji[0]), "");
  EXPECT_EQ(one.push(emoji[1]), "");
  EXPECT_EQ(one.push(emoji[2]), "");
  EXPECT_EQ(one.push(emoji[3]), "\xF0\x9F\x98\x80");

  StreamDecoder stream(t);
  std::string joined;
  for (int32_t id : t.encode(text)) {
    const std::string piece = stream.push(id);
    EXPECT_EQ(t.decode(t.encode(piece)), piece);  // each piece is whole UTF-8
    joined += piece;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, text);
}

TEST(FixtureTokenizer, IncompleteBytesBecomeReplacementCharacters) {
  const Tokenizer& t = fixture();
  const auto emoji = t.encode("\xF0\x9F\x98\x80");
  const std::vector<int32_t> cut(emoji.begin(), emoji.begin() + 2);
  EXPECT_EQ(t.decode(cut), "\xEF\xBF\xBD");
  StreamDecoder stream(t);
  for (int32_t id : cut) EXPECT_EQ(stream.push(id), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(stream.finish(), "");
  // A continuation byte alone can never complete: emitted at once.
  StreamDecoder lone(t);
  EXPECT_EQ(lone.push(emoji[1]), "\xEF\xBF\xBD");
}

TEST(FixtureTokenizer, RejectsBadInput) {
  const Tokenizer& t = fixture();
  EXPECT_THROW(t.encode("abc\xFF"), Error);
  EXPECT_THROW(t.decode(std::vector<int32_t>{4096}), Error);
  EXPECT_THROW(t.decode(std::vector<int32_t>{-1}), Error);
  EXPECT_THROW(Tokenizer::from_dir(TRELLIS_SOURCE_DIR "/no/such/model"), Error);
  EXPECT_TRUE(t.encode("").empty());
}

}  // namespace
}  // namespace trellis::tokenizer
