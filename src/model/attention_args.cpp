// attention_heads: the argument rules every backend's attention op checks
// (contract in trellis/model/backend.hpp).
#include <string>

#include "trellis/error.hpp"
#include "trellis/model/backend.hpp"

namespace trellis::model {

int64_t attention_heads(const Act& q, const Act& k, const Act& v, const KvCache& cache, int64_t layer, int64_t pos0,
                        const Act& out, const char* backend) {
  const auto fail = [&](const std::string& rule) {
    throw Error(std::string(backend) + " backend: attention: " + rule);
  };
  const int64_t kv_cols = cache.kv_heads * cache.head_dim;
  const int64_t heads = q.cols / cache.head_dim;
  if (!(k.cols == kv_cols && v.cols == kv_cols && q.cols % cache.head_dim == 0 && heads % cache.kv_heads == 0 &&
        k.rows == q.rows && v.rows == q.rows && out.rows == q.rows && out.cols == q.cols))
    fail("shapes");
  if (!(layer >= 0 && layer < cache.layers && pos0 >= 0 && pos0 + q.rows <= cache.capacity))
    fail("positions " + std::to_string(pos0) + ".." + std::to_string(pos0 + q.rows) + " exceed the cache (" +
         std::to_string(cache.capacity) + ")");
  return heads;
}

}  // namespace trellis::model
