// UTF-8 helpers for the tokenizer: validation, code-point iteration, and the
// two ways the tokenizer turns arbitrary bytes back into valid UTF-8
// (lossy repair for whole strings, "how much is complete" for streaming).
// Ill-formed input is repaired the way Rust's String::from_utf8_lossy does
// (one U+FFFD per maximal ill-formed subpart), so decoded text matches the
// Hugging Face tokenizers byte for byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trellis::tokenizer::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence starting at s[i], or 0 when the bytes
// there are ill-formed or cut off by the end of s.
std::size_t sequence_length(std::string_view s, std::size_t i);

// Byte offset of the first ill-formed byte, or s.size() when s is valid.
std::size_t first_invalid(std::string_view s);

// Decodes the code point at s[i] (s must be valid there) and advances i.
char32_t next(std::string_view s, std::size_t& i);

// Appends code point c as UTF-8.
void append(std::string& out, char32_t c);

// s with every maximal ill-formed subpart replaced by U+FFFD.
std::string repair(std::string_view s);

// Length of the longest prefix of s that can be emitted now: everything
// except a trailing sequence that is a valid but incomplete start of a
// multi-byte character (at most 3 bytes held back).
std::size_t complete_prefix(std::string_view s);

}  // namespace trellis::tokenizer::utf8
