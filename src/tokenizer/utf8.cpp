// UTF-8 helpers (see utf8.hpp). Well-formedness follows Unicode Table 3-7.
#include "utf8.hpp"

namespace trellis::tokenizer::utf8 {
namespace {

// The valid range of the second byte for lead byte b (Unicode Table 3-7);
// {0, 0} when b cannot lead a multi-byte sequence.
struct Range {
  unsigned char lo, hi;
};

Range second_byte_range(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return {0x80, 0xBF};
  if (b == 0xE0) return {0xA0, 0xBF};
  if (b == 0xED) return {0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {0x80, 0xBF};
  if (b == 0xF0) return {0x90, 0xBF};
  if (b == 0xF4) return {0x80, 0x8F};
  if (b >= 0xF1 && b <= 0xF3) return {0x80, 0xBF};
  return {0, 0};
}

std::size_t expected_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// How many bytes from s[i] form a well-formed prefix of a sequence (the
// "maximal subpart"), and the full length the lead byte announces.
std::size_t valid_prefix(std::string_view s, std::size_t i, std::size_t& want) {
  const auto b = static_cast<unsigned char>(s[i]);
  want = expected_length(b);
  if (want <= 1) return want;
  const Range r = second_byte_range(b);
  std::size_t n = 1;
  for (; n < want && i + n < s.size(); ++n) {
    const auto c = static_cast<unsigned char>(s[i + n]);
    const bool ok = n == 1 ? (c >= r.lo && c <= r.hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) break;
  }
  return n;
}

}  // namespace

std::size_t sequence_length(std::string_view s, std::size_t i) {
  std::size_t want = 0;
  const std::size_t got = valid_prefix(s, i, want);
  return got == want ? want : 0;
}

std::size_t first_invalid(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}

char32_t next(std::string_view s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = expected_length(b);
  char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string repair(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t want = 0;
    const std::size_t got = valid_prefix(s, i, want);
    if (want > 0 && got == want) {
      out.append(s.substr(i, got));
      i += got;
    } else {
      out.append(kReplacement);
      i += got == 0 ? 1 : got;
    }
  }
  return out;
}

std::size_t complete_prefix(std::string_view s) {
  // Only the last three bytes can be an unfinished sequence.
  const std::size_t from = s.size() > 3 ? s.size() - 3 : 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0xC0) continue;  // ASCII or continuation: not a lead
    std::size_t want = 0;
    const std::size_t got = valid_prefix(s, i, want);
    if (want > 1 && got == s.size() - i && got < want) return i;
  }
  return s.size();
}

}  // namespace trellis::tokenizer::utf8
