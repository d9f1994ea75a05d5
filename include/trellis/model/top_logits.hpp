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
#include <numeric>
#include <span>
#include <vector>

namespace trellis::model {

struct TopLogit {
  int32_t id;
  float logit;
};

inline std::vector<TopLogit> largest_logits(std::span<const float> row, size_t count) {
  if (std::any_of(row.begin(), row.end(), [](float v) { return std::isnan(v); })) return {};
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t n = std::min(count, row.size());
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), [&](int32_t a, int32_t b) {
    return row[size_t(a)] != row[size_t(b)] ? row[size_t(a)] > row[size_t(b)] : a < b;
  });
  std::vector<TopLogit> top(n);
  for (size_t i = 0; i < n; ++i) top[i] = {ids[i], row[size_t(ids[i])]};
  return top;
}

}  // namespace trellis::model
