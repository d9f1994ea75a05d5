// rope_inverse_frequencies (contract in trellis/model/rope.hpp).
#include "trellis/model/rope.hpp"

#include <cmath>

#include "trellis/half.hpp"

namespace trellis::model {

std::vector<float> rope_inverse_frequencies(int64_t head_dim, double theta, format::DType dtype) {
  std::vector<float> f(size_t(head_dim / 2));
  for (size_t i = 0; i < f.size(); ++i) {
    const float v = 1.0f / std::pow(float(theta), float(2 * i) / float(head_dim));
    f[i] = dtype == format::DType::BF16  ? round_bf16(v)
           : dtype == format::DType::F16 ? fp16_to_float(float_to_fp16(v))
                                         : v;
  }
  return f;
}

}  // namespace trellis::model
