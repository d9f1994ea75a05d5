// Causal GQA attention on the CPU (contract in attention.hpp).
#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace trellis::model::cpu {

CpuKvCache::CpuKvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity)
    : KvCache(layers, kv_heads, head_dim, capacity),
      keys_(size_t(layers * kv_heads * capacity * head_dim)),
      values_(size_t(layers * kv_heads * capacity * head_dim)) {}

void attention(ThreadPool& pool, const float* q, const float* k, const float* v, int64_t M, int64_t heads,
               CpuKvCache& cache, int64_t layer, int64_t pos0, float* out) {
  const int64_t d = cache.head_dim, kvh = cache.kv_heads, group = heads / kvh;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < kvh; ++g) {
      std::memcpy(cache.keys(layer, g) + (pos0 + m) * d, k + (m * kvh + g) * d, size_t(d) * sizeof(float));
      std::memcpy(cache.values(layer, g) + (pos0 + m) * d, v + (m * kvh + g) * d, size_t(d) * sizeof(float));
    }
  const float scale = float(1.0 / std::sqrt(double(d)));
  pool.parallel_for(M * heads, [&](int64_t begin, int64_t end) {
    std::vector<float> p(size_t(pos0 + M));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t m = item / heads, h = item % heads, n = pos0 + m + 1;
      const float* qh = q + (m * heads + h) * d;
      const float* K = cache.keys(layer, h / group);
      const float* V = cache.values(layer, h / group);
      float top = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        float s = 0;
        for (int64_t i = 0; i < d; ++i) s += qh[i] * K[j * d + i];
        p[size_t(j)] = s * scale;
        top = std::max(top, p[size_t(j)]);
      }
      float total = 0;
      for (int64_t j = 0; j < n; ++j) total += (p[size_t(j)] = std::exp(p[size_t(j)] - top));
      float* o = out + (m * heads + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float w = p[size_t(j)] / total;
        for (int64_t i = 0; i < d; ++i) o[i] += w * V[j * d + i];
      }
    }
  });
}

}  // namespace trellis::model::cpu
