// PCRE2 wrapper (see regex.hpp).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex.hpp"

#include <pcre2.h>

#include "trellis/error.hpp"
#include "utf8.hpp"

namespace trellis::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int rc) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(rc, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

struct MatchData {
  pcre2_match_data* md;
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (md == nullptr) throw Error("tokenizer regex: out of memory for match data");
  }
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

Regex::Regex(const std::string& pattern, bool literal) : code_(std::make_unique<Code>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                              &offset, nullptr);
  if (code_->code == nullptr) {
    throw Error("tokenizer regex /" + pattern + "/: " + pcre2_message(err) + " at offset " +
                std::to_string(offset));
  }
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<Span> Regex::find_all(std::string_view subject) const {
  std::vector<Span> spans;
  MatchData data(code_->code);
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t at = 0;
  while (at <= subject.size()) {
    const int rc = code_->jit ? pcre2_jit_match(code_->code, s, subject.size(), at, PCRE2_NO_UTF_CHECK, data.md,
                                                nullptr)
                              : pcre2_match(code_->code, s, subject.size(), at, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("tokenizer regex: match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    if (ov[1] > ov[0]) {
      spans.push_back({ov[0], ov[1]});
      at = ov[1];
    } else {  // empty match: step over one code point
      if (ov[0] >= subject.size()) break;
      const std::size_t n = utf8::sequence_length(subject, ov[0]);
      at = ov[0] + (n == 0 ? 1 : n);
    }
  }
  return spans;
}

}  // namespace trellis::tokenizer
