// The `normalizer` of a tokenizer.json. Supported: null, the Unicode forms
// NFC, NFD, NFKC and NFKD (through ICU; pure-ASCII text skips the call since
// every form leaves it unchanged), and a Sequence of those. Any other type
// throws trellis::Error naming it, at load time.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::tokenizer {

class Normalizer {
 public:
  explicit Normalizer(const nlohmann::json& spec);
  // text must be valid UTF-8.
  std::string apply(std::string_view text) const;

 private:
  enum class Form { NFC, NFD, NFKC, NFKD };
  void add(const nlohmann::json& spec);
  std::vector<Form> forms_;
};

}  // namespace trellis::tokenizer
