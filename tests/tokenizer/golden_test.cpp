// Golden token ids: for every string of tests/data/tokenizer/strings.json the
// ids must equal those Hugging Face's tokenizer produced (goldens.json, made
// by make_goldens.py or, provisionally, make_goldens.mjs), for the fixture
// tokenizer and for each variant of variants.json. Also: decode(encode(s))
// gives back s, up to the normalizer.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::tokenizer {
namespace {

using nlohmann::json;

const std::string kModelDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";
const std::string kData = TRELLIS_TEST_DATA "/tokenizer";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const json& goldens() {
  static const json g = json::parse(read(kData + "/goldens.json"));
  return g;
}

std::string show(const std::string& s) { return json(s).dump(); }

std::string show(const std::vector<int32_t>& ids) { return json(ids).dump(); }

// Compares every string's ids with the goldens; reports each mismatch.
void expect_goldens(const Tokenizer& tok, const json& expected, const std::string& name) {
  const auto& strings = goldens().at("strings");
  ASSERT_EQ(expected.size(), strings.size()) << name;
  int mismatches = 0;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const auto s = strings[i].get<std::string>();
    const auto want = expected[i].get<std::vector<int32_t>>();
    const auto got = tok.encode(s);
    if (got != want) {
      ++mismatches;
      ADD_FAILURE() << name << " string " << i << " " << show(s) << "\n  expected " << show(want) << "\n  got      "
                    << show(got);
    }
  }
  std::printf("%s: %zu strings, %d mismatches (goldens by %s)\n", name.c_str(), strings.size(), mismatches,
              goldens().at("generator").get<std::string>().c_str());
}

TEST(TokenizerGoldens, CoverTheCommittedStrings) {
  const json strings = json::parse(read(kData + "/strings.json")).at("strings");
  EXPECT_GE(strings.size(), 200u);
  EXPECT_EQ(goldens().at("strings"), strings) << "goldens.json is stale: rerun make_goldens.py";
  EXPECT_EQ(goldens().at("model"), "shakespeare-qwen3-15m");
}

TEST(TokenizerGoldens, Fixture) {
  const Tokenizer tok = Tokenizer::from_dir(kModelDir);
  expect_goldens(tok, goldens().at("ids"), "fixture");
}

TEST(TokenizerGoldens, FixtureRoundTrips) {
  const Tokenizer tok = Tokenizer::from_dir(kModelDir);
  for (const auto& s : goldens().at("strings")) {
    const auto text = s.get<std::string>();
    const auto ids = tok.encode(text);
    EXPECT_EQ(tok.encode(tok.decode(ids)), ids) << show(text);  // stable once normalized
    if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; })) {
      EXPECT_EQ(tok.decode(ids), text) << show(text);
    }
  }
}

TEST(TokenizerGoldens, Variants) {
  const json base = json::parse(read(kModelDir + "/tokenizer.json"));
  const json variants = json::parse(read(kData + "/variants.json")).at("variants");
  ASSERT_EQ(variants.size(), goldens().at("variants").size());
  for (const auto& v : variants) {
    const auto name = v.at("name").get<std::string>();
    json t = base;
    t.merge_patch(v.at("patch"));
    if (v.value("merges_as_strings", false))
      for (auto& m : t["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
    const Tokenizer tok = Tokenizer::from_json(t.dump());
    expect_goldens(tok, goldens().at("variants").at(name), name);
  }
}

}  // namespace
}  // namespace trellis::tokenizer
