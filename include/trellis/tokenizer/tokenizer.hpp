// trellis::tokenizer::Tokenizer — byte-level BPE loaded from a Hugging Face
// model directory (tokenizer.json, plus tokenizer_config.json,
// generation_config.json and chat_template.jinja when present).
//
// encode(text) produces the ids Hugging Face's `tokenizers` produces for
// `encode(text, add_special_tokens=False)`: added tokens are cut out first
// (special ones only when allow_special), the rest is normalized,
// pre-tokenized and merged. No BOS or post-processor tokens are added; chat
// templates write those explicitly. Input must be valid UTF-8.
// decode(ids) concatenates the tokens' bytes and repairs ill-formed UTF-8
// with U+FFFD, as Hugging Face's decode does; it does not apply transformers'
// clean_up_tokenization_spaces (a lossy, English-only rewrite of " ." etc.).
//
// What the loader cannot honour (another model type, normalizer or
// pre-tokenizer) throws trellis::Error naming it. A Tokenizer is immutable
// after loading; encode/decode are safe to call from several threads.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::tokenizer {

class Tokenizer {
 public:
  // Reads dir/tokenizer.json and the optional files beside it.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  // The same from file contents; empty strings stand for absent files.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json = {},
                             std::string_view generation_config_json = {});

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, bool allow_special = true) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // One past the largest id; ids below it may still be unused (see has_id).
  int32_t vocab_size() const;
  bool has_id(int32_t id) const;
  // The token as the vocabulary writes it (byte-level text, or an added
  // token's content). Throws for an unused id.
  const std::string& token(int32_t id) const;
  // The raw bytes the token stands for. Throws for an unused id.
  const std::string& token_bytes(int32_t id) const;
  // The id of a vocabulary or added token, written as token() writes it.
  std::optional<int32_t> id(std::string_view token) const;
  bool is_special(int32_t id) const;

  // From tokenizer_config.json (bos_token / eos_token) and
  // generation_config.json (bos_token_id / eos_token_id, int or list).
  std::optional<int32_t> bos_id() const;
  const std::vector<int32_t>& eos_ids() const;
  const std::optional<std::string>& bos_token() const;
  const std::optional<std::string>& eos_token() const;
  // tokenizer_config.json's add_bos_token (default false).
  bool add_bos() const;
  // The chat template source: chat_template.jinja, else tokenizer_config's
  // chat_template (a string, or the entry named "default" of a list).
  const std::optional<std::string>& chat_template() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trellis::tokenizer
