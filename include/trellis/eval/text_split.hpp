// Which bytes of a text file `trellis eval` scores.
//   all    [0, size)
//   train  [0, s)
//   val    [s, size)        s = floor(0.9 · size), computed as size·9/10 in
//                           integers (the tinyshakespeare convention: the
//                           last 10%; 1003854 for its 1,115,394 bytes)
// from_byte, when given, replaces the split: [from_byte, size).
// A cut inside a multi-byte UTF-8 character moves forward to the next
// character, so both sides stay valid UTF-8 (the tokenizer's input).
// Errors (trellis::Error naming the file): unreadable, from_byte past the end.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::eval {

enum class Split { all, train, val };

// "all", "train" or "val"; anything else is a trellis::Error naming it.
Split parse_split(std::string_view name);

struct TextSlice {
  std::string text;  // bytes [begin, end) of the file
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t file_size = 0;
};

// The byte where the validation split starts: floor(0.9 · size).
uint64_t val_split_byte(uint64_t size);

TextSlice read_text(const std::filesystem::path& path, Split split, std::optional<uint64_t> from_byte = {});

}  // namespace trellis::eval
