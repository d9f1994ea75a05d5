// A compiled PCRE2 pattern for pre-tokenization: UTF + UCP mode (so \s, \w,
// \d and \p{..} are Unicode-aware, as in the Oniguruma engine Hugging Face
// uses), JIT-compiled when the library supports it. Subjects must be valid
// UTF-8 (the tokenizer checks once up front). Thread-safe: each call takes its
// own match data.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::tokenizer {

struct Span {
  std::size_t begin, end;  // byte offsets into the subject
};

class Regex {
 public:
  // Throws trellis::Error naming the pattern and PCRE2's message.
  // literal = true matches `pattern` as plain text.
  explicit Regex(const std::string& pattern, bool literal = false);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match, left to right. An empty match never makes
  // a span; the search then moves on by one code point.
  std::vector<Span> find_all(std::string_view subject) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace trellis::tokenizer
