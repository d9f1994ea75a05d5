// Unicode normalization (see normalizer.hpp).
#include "normalizer.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>

#include "trellis/error.hpp"

namespace trellis::tokenizer {

Normalizer::Normalizer(const nlohmann::json& spec) {
  if (!spec.is_null()) add(spec);
}

void Normalizer::add(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    for (const auto& s : spec.at("normalizers")) add(s);
  } else if (type == "NFC") {
    forms_.push_back(Form::NFC);
  } else if (type == "NFD") {
    forms_.push_back(Form::NFD);
  } else if (type == "NFKC") {
    forms_.push_back(Form::NFKC);
  } else if (type == "NFKD") {
    forms_.push_back(Form::NFKD);
  } else {
    throw Error("tokenizer.json: normalizer '" + type +
                "' is not supported (supported: null, NFC, NFD, NFKC, NFKD, Sequence)");
  }
}

std::string Normalizer::apply(std::string_view text) const {
  std::string cur(text);
  if (forms_.empty() || std::all_of(cur.begin(), cur.end(), [](char c) { return (c & 0x80) == 0; })) return cur;
  for (const Form f : forms_) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = f == Form::NFC    ? icu::Normalizer2::getNFCInstance(status)
                                : f == Form::NFD  ? icu::Normalizer2::getNFDInstance(status)
                                : f == Form::NFKC ? icu::Normalizer2::getNFKCInstance(status)
                                                  : icu::Normalizer2::getNFKDInstance(status);
    std::string out;
    icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(cur.size()));
    if (U_SUCCESS(status)) n->normalizeUTF8(0, icu::StringPiece(cur.data(), static_cast<int32_t>(cur.size())), sink, nullptr, status);
    if (U_FAILURE(status)) throw Error(std::string("tokenizer: Unicode normalization failed: ") + u_errorName(status));
    cur = std::move(out);
  }
  return cur;
}

}  // namespace trellis::tokenizer
