// The inverse frequencies of rotate-half RoPE ("default" rope_type):
//   f_i = 1 / θ^(2i/d), i < d/2, computed in fp32 as Hugging Face computes
//   them, then rounded to the checkpoint's float dtype (bf16, fp16 or fp32).
// The rounding is what transformers runs: it keeps the inv_freq buffer in
// the model's dtype, so a bf16 checkpoint (trained and served that way)
// rotates with bf16 frequencies. The fixture's reference logits match it to
// < 1e-4; with fp32 frequencies they differ by up to 0.04 at position ~100.
#pragma once
#include <cstdint>
#include <vector>

#include "trellis/format/dtype.hpp"

namespace trellis::model {

std::vector<float> rope_inverse_frequencies(int64_t head_dim, double theta, format::DType checkpoint_dtype);

}  // namespace trellis::model
