// Added-token matching (see added_tokens.hpp).
#include "added_tokens.hpp"

#include <algorithm>

#include "trellis/error.hpp"

namespace trellis::tokenizer {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

AddedTokens::AddedTokens(const nlohmann::json& spec) {
  if (spec.is_null()) return;
  for (const auto& t : spec) {
    AddedToken a{t.at("id").get<int32_t>(), t.at("content").get<std::string>(), t.value("special", false),
                 t.value("lstrip", false), t.value("rstrip", false)};
    if (a.content.empty()) throw Error("tokenizer.json: added token " + std::to_string(a.id) + " is empty");
    if (t.value("single_word", false))
      throw Error("tokenizer.json: added token '" + a.content + "' uses single_word, which is not supported");
    tokens_.push_back(std::move(a));
  }
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](std::size_t a, std::size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

std::vector<Segment> AddedTokens::split(std::string_view text, bool allow_special) const {
  std::vector<Segment> out;
  std::size_t plain_begin = 0;  // start of the pending plain text
  std::size_t i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (const std::size_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& t = tokens_[k];
      if ((allow_special || !t.special) && text.substr(i).starts_with(t.content)) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    std::size_t plain_end = i;
    if (hit->lstrip)
      while (plain_end > plain_begin && is_space(text[plain_end - 1])) --plain_end;
    if (plain_end > plain_begin) out.push_back({text.substr(plain_begin, plain_end - plain_begin), -1});
    out.push_back({text.substr(i, hit->content.size()), hit->id});
    i += hit->content.size();
    if (hit->rstrip)
      while (i < text.size() && is_space(text[i])) ++i;
    plain_begin = i;
  }
  if (plain_begin < text.size()) out.push_back({text.substr(plain_begin), -1});
  return out;
}

}  // namespace trellis::tokenizer
