// GPT-2 byte <-> unicode map (see byte_unicode.hpp).
#include "byte_unicode.hpp"

#include "utf8.hpp"

namespace trellis::tokenizer {
namespace {

bool shown_as_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Map {
  std::array<char32_t, 256> code{};
  std::array<std::string, 256> text;
  Map() {
    char32_t extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      code[b] = shown_as_itself(b) ? static_cast<char32_t>(b) : extra++;
      utf8::append(text[b], code[b]);
    }
  }
};

const Map& map() {
  static const Map m;
  return m;
}

}  // namespace

const std::string& byte_to_unicode(unsigned char b) { return map().text[b]; }

std::optional<unsigned char> unicode_to_byte(char32_t c) {
  if (c < 0x100 && shown_as_itself(static_cast<int>(c))) return static_cast<unsigned char>(c);
  if (c >= 0x100 && c < 0x100 + 68) {
    const auto& code = map().code;
    for (int b = 0; b < 256; ++b)
      if (code[b] == c) return static_cast<unsigned char>(b);
  }
  return std::nullopt;
}

std::string bytes_to_unicode_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) out += byte_to_unicode(static_cast<unsigned char>(b));
  return out;
}

std::string unicode_text_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    const std::size_t n = utf8::sequence_length(text, i);
    if (n == 0) {  // not text at all: keep the byte
      out += text[i++];
      continue;
    }
    const char32_t c = utf8::next(text, i);
    if (const auto b = unicode_to_byte(c)) {
      out += static_cast<char>(*b);
    } else {
      out.append(text.substr(start, i - start));
    }
  }
  return out;
}

}  // namespace trellis::tokenizer
