// The tokenizer's UTF-8 helpers (internal): lossy repair as Rust's
// String::from_utf8_lossy does it, and what a stream may emit now.
#include <gtest/gtest.h>

#include "utf8.hpp"

namespace trellis::tokenizer::utf8 {
namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST(TokenizerUtf8, RepairReplacesEachMaximalIllFormedSubpart) {
  EXPECT_EQ(repair("plain ascii"), "plain ascii");
  EXPECT_EQ(repair("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(repair("\xE6\x97" "A"), R + "A");          // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(repair("\xC0\x80"), R + R);                // overlong: two
  EXPECT_EQ(repair("\xED\xA0\x80"), R + R + R);        // surrogate: three
  EXPECT_EQ(repair("\x80\xBF"), R + R);                // lone continuations
  EXPECT_EQ(repair("\xF0\x9F\x98"), R);                // cut at the end
  EXPECT_EQ(repair("\xF5\x80"), R + R);                // beyond U+10FFFF
  EXPECT_EQ(repair(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(TokenizerUtf8, CompletePrefixHoldsBackOnlyUnfinishedCharacters) {
  EXPECT_EQ(complete_prefix(""), 0u);
  EXPECT_EQ(complete_prefix("abc"), 3u);
  EXPECT_EQ(complete_prefix("a\xF0\x9F"), 1u);
  EXPECT_EQ(complete_prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(complete_prefix("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(complete_prefix("\xC3"), 0u);
  EXPECT_EQ(complete_prefix("\x80"), 1u);      // can never complete: emit (as U+FFFD)
  EXPECT_EQ(complete_prefix("\xC3" "A"), 2u);  // broken already: emit
  EXPECT_EQ(complete_prefix("\xED\xA0"), 2u);  // would be a surrogate: emit
}

TEST(TokenizerUtf8, ValidationAndCodePoints) {
  EXPECT_EQ(first_invalid("ok \xE2\x82\xAC"), 6u);
  EXPECT_EQ(first_invalid("ab\xFF"), 2u);
  std::string s;
  for (char32_t c : {U'A', U'\u00E9', U'\u65E5', U'\U0001F600'}) append(s, c);
  EXPECT_EQ(s, "A\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80");
  std::size_t i = 0;
  EXPECT_EQ(next(s, i), U'A');
  EXPECT_EQ(next(s, i), U'\u00E9');
  EXPECT_EQ(next(s, i), U'\u65E5');
  EXPECT_EQ(next(s, i), U'\U0001F600');
  EXPECT_EQ(i, s.size());
}

}  // namespace
}  // namespace trellis::tokenizer::utf8
