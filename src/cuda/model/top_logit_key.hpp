// A top_logits.cu key back as (id, logit), on the host (Backend::top_logits)
// and on the device (the choice kernel, top_choice.cu): the key of x_i is
// logit_key(x_i, i) (device_math.cuh): the high word x's bits mapped to an
// order (sign bit flipped for x ≥ 0, every bit for x < 0), the low word
// 2^32 − 1 − i. kNanRowKey, the largest key, is what a row with a NaN puts
// first (it has no entries).
#pragma once
#include <cstdint>
#include <cstring>

#include "trellis/hd.hpp"
#include "trellis/model/top_choice.hpp"

namespace trellis::model::cuda {

inline constexpr uint64_t kNanRowKey = ~uint64_t(0);

TRELLIS_HD TopLogit top_logit_of(uint64_t key) {
  const auto order = uint32_t(key >> 32);
  const uint32_t bits = (order & 0x80000000u) ? order ^ 0x80000000u : ~order;
#if defined(__CUDA_ARCH__)
  const float logit = __uint_as_float(bits);
#else
  float logit;
  std::memcpy(&logit, &bits, sizeof logit);
#endif
  return {int32_t(0xffffffffu - uint32_t(key)), logit};
}

}  // namespace trellis::model::cuda
