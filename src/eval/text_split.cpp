// Reading the scored bytes of a text file (contract in trellis/eval/text_split.hpp).
#include "trellis/eval/text_split.hpp"

#include <fstream>
#include <iterator>

#include "trellis/error.hpp"

namespace trellis::eval {
namespace {

// The first character boundary at or after `pos` (UTF-8 continuation bytes are 10xxxxxx).
uint64_t char_boundary(const std::string& s, uint64_t pos) {
  while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xc0u) == 0x80u) ++pos;
  return pos;
}

}  // namespace

Split parse_split(std::string_view name) {
  if (name == "all") return Split::all;
  if (name == "train") return Split::train;
  if (name == "val") return Split::val;
  throw Error("unknown split '" + std::string(name) + "' (expected val, train or all)");
}

uint64_t val_split_byte(uint64_t size) { return size / 10 * 9 + size % 10 * 9 / 10; }

TextSlice read_text(const std::filesystem::path& path, Split split, std::optional<uint64_t> from_byte) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) throw Error(path.string() + ": cannot read the text file");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path.string() + ": error reading the text file");
  const uint64_t size = all.size();
  if (from_byte && *from_byte > size)
    throw Error(path.string() + ": --from-byte " + std::to_string(*from_byte) + " is past the end (" +
                std::to_string(size) + " bytes)");
  const uint64_t cut = char_boundary(all, from_byte ? *from_byte : val_split_byte(size));
  uint64_t begin = 0, end = size;
  if (from_byte || split == Split::val) begin = cut;
  else if (split == Split::train) end = cut;
  return {all.substr(begin, end - begin), begin, end, size};
}

}  // namespace trellis::eval
