// Byte-level BPE merging (see bpe.hpp).
#include "bpe.hpp"

#include <queue>

#include "byte_unicode.hpp"
#include "trellis/error.hpp"

namespace trellis::tokenizer {
namespace {

// Bounds the per-piece cache; when full it starts over.
constexpr std::size_t kCacheLimit = 1 << 18;

// Pieces this long skip the cache (runs of spaces, long numbers...).
constexpr std::size_t kCacheMaxPiece = 256;

void require_null(const nlohmann::json& spec, const char* field) {
  if (spec.contains(field) && !spec[field].is_null() && !(spec[field].is_boolean() && !spec[field].get<bool>()))
    throw Error(std::string("tokenizer.json: BPE option '") + field + "' is not supported");
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "BPE");
  if (type != "BPE") throw Error("tokenizer.json: model type '" + type + "' is not supported (only BPE)");
  for (const char* f : {"dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"})
    require_null(spec, f);
  ignore_merges_ = spec.value("ignore_merges", false);

  for (const auto& [token, id] : spec.at("vocab").items()) vocab_.emplace(token, id.get<int32_t>());
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(byte_to_unicode(static_cast<unsigned char>(b)));
    if (it == vocab_.end())
      throw Error("tokenizer.json: vocabulary has no token for byte " + std::to_string(b) +
                  "; not a byte-level BPE vocabulary");
    byte_ids_[b] = it->second;
  }

  const auto& merges = spec.at("merges");
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw Error("tokenizer.json: merge " + std::to_string(rank) + " '" + s + "' is not two tokens");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      throw Error("tokenizer.json: merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b), ir = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || ir == vocab_.end())
      throw Error("tokenizer.json: merge " + std::to_string(rank) + " ('" + a + "', '" + b +
                  "') uses a token that is not in the vocabulary");
    merges_.emplace(pair_key(ia->second, ib->second), Merge{static_cast<int32_t>(rank), ir->second});
  }
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const bool cacheable = piece.size() <= kCacheMaxPiece;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    const auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = merge(piece);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(piece, std::move(ids));
  }
}

std::vector<int32_t> BpeModel::merge(std::string_view piece) const {
  if (ignore_merges_) {
    const auto it = vocab_.find(bytes_to_unicode_text(piece));
    if (it != vocab_.end()) return {it->second};
  }
  // Symbols form a linked list over the piece's bytes; merged-away symbols
  // are marked dead (id -1). Candidate pairs wait in a heap ordered by
  // (rank, position) and are checked when popped.
  const int n = static_cast<int>(piece.size());
  std::vector<int32_t> id(n);
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  using Candidate = std::pair<int32_t, int>;  // (rank, left position)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = merges_.find(pair_key(id[left], id[next[left]]));
    if (it != merges_.end()) heap.emplace(it->second.rank, left);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const auto [rank, left] = heap.top();
    heap.pop();
    if (id[left] < 0 || next[left] < 0) continue;
    const int right = next[left];
    const auto it = merges_.find(pair_key(id[left], id[right]));
    if (it == merges_.end() || it->second.rank != rank) continue;
    id[left] = it->second.result;
    id[right] = -1;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left]);
    push(left);
  }
  std::vector<int32_t> ids;
  for (int i = 0; i >= 0 && i < n; i = next[i]) ids.push_back(id[i]);
  return ids;
}

}  // namespace trellis::tokenizer
