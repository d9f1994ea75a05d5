// Causal GQA attention over a fp32 KV cache (math in trellis/model/backend.hpp).
//
// CpuKvCache stores keys and values as [layer][kv_head][position][head_dim]
// fp32, so one head's keys are contiguous for the score loop. attention()
// writes rows m of k and v at positions pos0 + m, then for every (m, head)
// pair — split across threads — computes scores q·K[j]/√d for j ≤ pos0 + m,
// a max-subtracted fp32 softmax, and the weighted sum of V[j]. Each pair's
// result depends only on q and the cache, so batched and incremental
// forwards agree bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "thread_pool.hpp"
#include "trellis/model/backend.hpp"

namespace trellis::model::cpu {

class CpuKvCache final : public KvCache {
 public:
  CpuKvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity);
  float* keys(int64_t layer, int64_t head) { return at(keys_, layer, head); }
  float* values(int64_t layer, int64_t head) { return at(values_, layer, head); }

 private:
  float* at(std::vector<float>& v, int64_t layer, int64_t head) {
    return v.data() + ((layer * kv_heads + head) * capacity) * head_dim;
  }
  std::vector<float> keys_;
  std::vector<float> values_;
};

// q, out [M, heads·d]; k, v [M, kv_heads·d]; heads a multiple of kv_heads.
void attention(ThreadPool& pool, const float* q, const float* k, const float* v, int64_t M, int64_t heads,
               CpuKvCache& cache, int64_t layer, int64_t pos0, float* out);

}  // namespace trellis::model::cpu
