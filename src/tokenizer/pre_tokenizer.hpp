// The `pre_tokenizer` of a tokenizer.json: cuts normalized text into the
// pieces BPE merges within. Supported steps, alone or in a Sequence:
//   Split     {pattern: {Regex|String}, behavior: Isolated|Removed, invert}
//   ByteLevel {add_prefix_space, use_regex}: with use_regex the GPT-2 pattern
//             splits each piece (Isolated); add_prefix_space puts a space in
//             front of each piece that does not start with one.
// Pieces are raw UTF-8 bytes; the byte-level mapping happens in the BPE
// model. Anything else throws trellis::Error naming it, at load time.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "regex.hpp"

namespace trellis::tokenizer {

class PreTokenizer {
 public:
  explicit PreTokenizer(const nlohmann::json& spec);
  // text must be valid UTF-8.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Step {
    std::optional<Regex> regex;  // none: the piece passes whole
    bool keep_matches = true;  // Isolated keeps both; Removed drops matches
    bool invert = false;
    bool prefix_space = false;  // ByteLevel's add_prefix_space, applied first
  };
  void add(const nlohmann::json& spec);
  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace trellis::tokenizer
