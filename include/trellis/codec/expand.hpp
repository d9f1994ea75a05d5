// Decoding whole trellis tensors on the CPU (the reference for every kernel).
//
// expand_to_f32 writes the canonical fp32 weights float32(y)·f_r of the
// logical matrix W [out_features, in_features] (row-major), whatever the
// tensor's axis and layout; expand_to_bf16 writes bf16_rne of the same.
#pragma once
#include <cstdint>

#include "trellis/trellis_tensor.hpp"

namespace trellis {

// states[t] for t in [0, T) of one block (T·k/32 words).
void decode_block_states(const uint32_t* words, int T, int k, int L, uint32_t* states);

void expand_to_f32(const TrellisTensorView& w, float* out);
void expand_to_bf16(const TrellisTensorView& w, uint16_t* out);

}  // namespace trellis
