// Pre-tokenization (see pre_tokenizer.hpp).
#include "pre_tokenizer.hpp"

#include "trellis/error.hpp"

namespace trellis::tokenizer {
namespace {

// The pattern of Hugging Face's ByteLevel pre-tokenizer (GPT-2's).
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

PreTokenizer::PreTokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) throw Error("tokenizer.json: pre_tokenizer is null; only byte-level BPE is supported");
  add(spec);
  if (!byte_level_) throw Error("tokenizer.json: pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
}

void PreTokenizer::add(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    for (const auto& s : spec.at("pretokenizers")) add(s);
  } else if (type == "Split") {
    const auto& pattern = spec.at("pattern");
    const bool literal = pattern.contains("String");
    if (!literal && !pattern.contains("Regex"))
      throw Error("tokenizer.json: Split pre-tokenizer pattern has neither Regex nor String");
    const std::string behavior = spec.value("behavior", "Isolated");
    if (behavior != "Isolated" && behavior != "Removed")
      throw Error("tokenizer.json: Split behavior '" + behavior + "' is not supported (supported: Isolated, Removed)");
    steps_.push_back({Regex(pattern.at(literal ? "String" : "Regex").get<std::string>(), literal),
                      behavior == "Isolated", spec.value("invert", false), false});
  } else if (type == "ByteLevel") {
    byte_level_ = true;
    const bool prefix = spec.value("add_prefix_space", false);
    if (spec.value("use_regex", true)) {
      steps_.push_back({Regex(kGpt2Pattern), true, false, prefix});
    } else if (prefix) {
      steps_.push_back({std::nullopt, true, false, true});
    }
  } else {
    throw Error("tokenizer.json: pre-tokenizer '" + type +
                "' is not supported (supported: Split, ByteLevel, Sequence)");
  }
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  if (text.empty()) return {};
  std::vector<std::string> pieces{std::string(text)};
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.prefix_space && piece.front() != ' ') piece.insert(0, 1, ' ');
      if (!step.regex) {
        next.push_back(std::move(piece));
        continue;
      }
      std::size_t at = 0;
      // Gaps between matches are "non-matches"; invert swaps the roles.
      auto emit = [&](std::size_t b, std::size_t e, bool is_match) {
        if (e <= b) return;
        if (is_match != step.invert && !step.keep_matches) return;
        next.push_back(piece.substr(b, e - b));
      };
      for (const Span& m : step.regex->find_all(piece)) {
        emit(at, m.begin, false);
        emit(m.begin, m.end, true);
        at = m.end;
      }
      emit(at, piece.size(), false);
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace trellis::tokenizer
