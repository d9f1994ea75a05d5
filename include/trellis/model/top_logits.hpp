// The largest logits of a row with their ids: what a sampler with top-k needs
// from a vocabulary of logits (Sampler::sample_top), so that a device can send
// back a few candidates instead of the whole row.
//
// largest_logits(row, count): the min(count, n) entries of largest value,
// sorted by value (descending), then id (ascending), or nothing when the row
// holds a NaN (which has no place in that order; the caller then samples
// from the whole row).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace trellis::model {

struct TopLogit {
  int32_t id;
  float logit;
};

// One pass with the entries kept so far in a heap whose front is the last
// of them in that order: a later entry enters only with a larger value (a
// later id loses a tie), so most of a row costs one comparison each.
inline std::vector<TopLogit> largest_logits(std::span<const float> row, size_t count) {
  const auto before = [](const TopLogit& a, const TopLogit& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };
  std::vector<TopLogit> top;
  top.reserve(std::min(count, row.size()));
  for (size_t i = 0; i < row.size(); ++i) {
    const float v = row[i];
    if (std::isnan(v)) return {};
    if (top.size() < count) {
      top.push_back({int32_t(i), v});
      std::push_heap(top.begin(), top.end(), before);
    } else if (count > 0 && v > top.front().logit) {
      std::pop_heap(top.begin(), top.end(), before);
      top.back() = {int32_t(i), v};
      std::push_heap(top.begin(), top.end(), before);
    }
  }
  std::sort(top.begin(), top.end(), before);
  return top;
}

}  // namespace trellis::model
