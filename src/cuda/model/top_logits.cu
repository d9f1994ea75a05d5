// The largest logits of a row on the GPU, so that sampling with top-k copies
// back `count` entries instead of the vocabulary (Backend::top_logits; the
// host picks among them, model::Sampler::sample_top).
//
// Each value is one 64-bit key, larger for a larger value, then a lower index:
// logit_key(x_i, i) (device_math.cuh, argmax.cu's keys) with −0 taken as +0,
// and every NaN is 2^64 − 1, so a row with a NaN puts one first (the host
// then takes the whole row). The first `count` keys in descending order are
// largest_logits' entries (top_logits.hpp) in its order (a −0 logit comes
// back as +0).
//
// Two launches of 512-thread blocks that each sort 4096 keys (cub's block
// radix sort, descending) and keep their first `count`: one block per 4096
// values of the row, then one block over those blocks' keys (zero keys pad
// both; zero is below every value's key). The sort looks at the keys' value
// words only (bits 32..63: 8 radix passes, not 16): the radix sort is stable
// and takes a thread's keys in blocked order, ascending index (the second
// launch's input, the blocks' lists one after another, holds equal values in
// ascending index too), so equal values stay in the index order their low
// words would give. Deterministic, allocates nothing:
// capturable in the decode step's CUDA graph. Serves count < n,
// count ≤ kTopLogitsMaxCount and ⌈n / 4096⌉ · count ≤ 4096.
#include <cub/block/block_radix_sort.cuh>

#include <cstdint>
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"
#include "top_logit_key.hpp"
#include "trellis/error.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 512, kItems = 8, kBlockKeys = kThreads * kItems;
static_assert(kBlockKeys == kTopLogitsBlockKeys);

__device__ __forceinline__ uint64_t top_key(float v, int64_t i) {
  if (v != v) return kNanRowKey;
  return logit_key(v == 0.0f ? 0.0f : v, i);  // −0 as +0: equal values
}

// Block b sorts the keys of entries [4096·b, 4096·b + 4096) of the row x
// (values) or of `keys` (keys), n entries in all, and writes its first
// `count` to out[b·count ..].
__global__ void __launch_bounds__(kThreads) top_keys_kernel(const float* x, const uint64_t* keys, int64_t n,
                                                            int count, uint64_t* out) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  using Sort = cub::BlockRadixSort<uint64_t, kThreads, kItems>;
  __shared__ typename Sort::TempStorage sort_storage;
  uint64_t k[kItems];
  const int64_t first = int64_t(blockIdx.x) * kBlockKeys + int64_t(threadIdx.x) * kItems;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = first + j;  // blocked: the stable sort keeps equal values in this order
    k[j] = i >= n ? 0 : x ? top_key(x[i], i) : keys[i];
  }
  Sort(sort_storage).SortDescending(k, 32, 64);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {  // blocked: thread t holds ranks kItems·t ..
    const int rank = int(threadIdx.x) * kItems + j;
    if (rank < count) out[int64_t(blockIdx.x) * count + rank] = k[j];
  }
}

int64_t row_blocks(int64_t n) { return (n + kBlockKeys - 1) / kBlockKeys; }

}  // namespace

bool top_logits_serves(int64_t n, int count) {
  return count >= 1 && count <= kTopLogitsMaxCount && count < n && n <= INT32_MAX &&
         row_blocks(n) * count <= kBlockKeys;
}

void launch_top_logit_keys(const float* x, int64_t n, int count, TopLogitsScratch s, cudaStream_t stream) {
  if (!top_logits_serves(n, count))
    throw Error("cuda backend: top_logits: the " + std::to_string(count) + " largest of a row of " +
                std::to_string(n) + " values (count < n, count ≤ " + std::to_string(kTopLogitsMaxCount) +
                ", ⌈n / " + std::to_string(kBlockKeys) + "⌉ · count ≤ " + std::to_string(kBlockKeys) + ")");
  const int64_t blocks = row_blocks(n);
  launch_programmatic(top_keys_kernel, unsigned(blocks), kThreads, 0, stream, x, static_cast<const uint64_t*>(nullptr),
                      n, count, s.block_keys);
  check_launch("top_logits (blocks)");
  launch_programmatic(top_keys_kernel, 1u, kThreads, 0, stream, static_cast<const float*>(nullptr),
                      static_cast<const uint64_t*>(s.block_keys), blocks * count, count, s.keys);
  check_launch("top_logits (merge)");
}

}  // namespace trellis::model::cuda
