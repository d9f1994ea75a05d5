// The `added_tokens` of a tokenizer.json: strings matched verbatim in the raw
// input before normalization and pre-tokenization, longest first at the
// leftmost position. Tokens flagged `special` are matched only when the
// caller allows special tokens; the others always. `lstrip`/`rstrip` make a
// match swallow the whitespace before/after it. `single_word` is not
// supported (throws trellis::Error at load). `normalized` tokens are matched
// in the raw text too, which is exact when the text is already in the
// normalizer's form.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::tokenizer {

struct AddedToken {
  int32_t id;
  std::string content;
  bool special;
  bool lstrip;
  bool rstrip;
};

// A piece of input: either an added token (id >= 0) or text to tokenize.
struct Segment {
  std::string_view text;
  int32_t id;  // -1 for plain text
};

class AddedTokens {
 public:
  explicit AddedTokens(const nlohmann::json& spec);
  std::vector<Segment> split(std::string_view text, bool allow_special) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  // For each first byte, indices into tokens_, longest content first.
  std::array<std::vector<std::size_t>, 256> by_first_byte_;
};

}  // namespace trellis::tokenizer
