// The largest logits of a row with their ids: what a sampler with top-k needs
// from a vocabulary of logits (Sampler::sample_top), so that a device can send
// back a few candidates instead of the whole row; and the one-pass scan that
// finds them, which the sampler's own top-k uses too.
//
// largest_logits(row, count): the min(count, n) entries of largest value,
// sorted by value (descending), then id (ascending), or nothing when the row
// holds a NaN (which has no place in that order; the caller then samples
// from the whole row).
//
// first_scaled(row, divisor, k), 0 < k ≤ n, divisor > 0: the k first of
// (id, row[id] / divisor) in that order, unsorted. They are kept in a heap
// whose front is the last of them. Dividing by a positive number never
// reorders two values, and a later id loses every tie, so a value can enter
// only when it is larger than the front's undivided value: the scan compares
// raw values (visit_above) and divides only where one is larger. A NaN is
// never larger, so it can be among them only as one of the first k ids.
// Measured against the nth_element pass it replaced: cpu_sampling_bench,
// bench/results/cpu_sampling.json.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "trellis/model/top_choice.hpp"

namespace trellis::model {

// Larger value first, then lower id.
inline bool logit_before(const TopLogit& a, const TopLogit& b) {
  return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
}

// visit(i) for every i >= begin, except in the blocks of 64 values whose
// largest is not above floor() (read again before each block): a block first
// gets its largest value with no branch (8 independent lanes the compiler
// vectorises; NaNs drop out of it). The last, partial block is visited whole.
template <class Floor, class Visit>
void visit_above(std::span<const float> row, size_t begin, Floor floor, Visit visit) {
  constexpr size_t kBlock = 64, kLanes = 8;
  const size_t n = row.size();
  size_t i = begin;
  for (; i + kBlock <= n; i += kBlock) {
    float lane[kLanes];
    for (float& l : lane) l = -INFINITY;
    for (size_t j = 0; j < kBlock; j += kLanes)
      for (size_t l = 0; l < kLanes; ++l) lane[l] = row[i + j + l] > lane[l] ? row[i + j + l] : lane[l];
    float top = lane[0];
    for (size_t l = 1; l < kLanes; ++l) top = lane[l] > top ? lane[l] : top;
    if (top > floor())
      for (size_t j = i; j < i + kBlock; ++j) visit(j);
  }
  for (; i < n; ++i) visit(i);
}

inline std::vector<TopLogit> first_scaled(std::span<const float> row, float divisor, size_t k) {
  struct Kept {
    TopLogit scaled;
    float raw;
  };
  const auto later = [](const Kept& a, const Kept& b) { return logit_before(a.scaled, b.scaled); };
  std::vector<Kept> heap;
  heap.reserve(k);
  for (size_t i = 0; i < k; ++i) heap.push_back({{int32_t(i), row[i] / divisor}, row[i]});
  std::make_heap(heap.begin(), heap.end(), later);
  const auto offer = [&](size_t i) {
    if (!(row[i] > heap.front().raw)) return;
    const TopLogit x{int32_t(i), row[i] / divisor};
    if (!logit_before(x, heap.front().scaled)) return;
    std::pop_heap(heap.begin(), heap.end(), later);
    heap.back() = {x, row[i]};
    std::push_heap(heap.begin(), heap.end(), later);
  };
  visit_above(row, k, [&] { return heap.front().raw; }, offer);
  std::vector<TopLogit> top;
  top.reserve(k);
  for (const Kept& x : heap) top.push_back(x.scaled);
  return top;
}

inline std::vector<TopLogit> largest_logits(std::span<const float> row, size_t count) {
  if (std::any_of(row.begin(), row.end(), [](float v) { return std::isnan(v); })) return {};
  const size_t k = std::min(count, row.size());
  if (k == 0) return {};
  std::vector<TopLogit> top = first_scaled(row, 1.0f, k);
  std::sort(top.begin(), top.end(), logit_before);
  return top;
}

}  // namespace trellis::model
