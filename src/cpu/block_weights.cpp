// The code-value table behind block_weights (block_weights.hpp): y(s) as
// float32 for all 2^16 states, built once, thread-safely, on first use.
#include <vector>

#include "block_weights.hpp"

namespace trellis::cpu {

const float* code_value_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(size_t(1) << 16);
    for (uint32_t s = 0; s < t.size(); ++s) t[s] = float(code_value(s));
    return t;
  }();
  return table.data();
}

}  // namespace trellis::cpu
