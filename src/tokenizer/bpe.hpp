// The byte-level BPE model of a tokenizer.json ("model": {"type": "BPE"}):
// vocabulary (byte-level text -> id), ranked merges (either the "a b" string
// form or the ["a", "b"] pair form) and `ignore_merges` (a piece that is
// itself in the vocabulary becomes that one token). Merging applies the
// lowest-ranked adjacent pair first, leftmost first among equals, as Hugging
// Face does. Results are cached per piece; encode_piece is thread-safe.
// Unsupported options (dropout, continuing_subword_prefix, end_of_word_suffix,
// byte_fallback) and merges whose result is not in the vocabulary throw
// trellis::Error at load time, as does a vocabulary missing one of the 256
// byte tokens.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trellis::tokenizer {

class BpeModel {
 public:
  explicit BpeModel(const nlohmann::json& spec);

  // Appends the ids of one pre-tokenized piece of raw bytes.
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  // Vocabulary, keyed by byte-level text.
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  std::vector<int32_t> merge(std::string_view piece) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};
  bool ignore_merges_ = false;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace trellis::tokenizer
