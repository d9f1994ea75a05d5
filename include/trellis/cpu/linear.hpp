// CPU trellis linear layers: y[M, out] = x[M, in] · Wᵀ for a trellis-coded
// W [out, in] stored on axis 1 or axis 0, row-major or k3-interleaved.
//
// Contract (every mode, both axes, both layouts):
//   - per-weight numerics as named by `mode` (trellis/numerics.hpp);
//   - for every output, the sum over input features runs in order
//     i = 0 … in−1 in one fp32 accumulator (no reassociation), so results do
//     not depend on the thread count and `rounded` equals expand_to_bf16
//     followed by a plain fp32 triple-loop GEMM bit for bit;
//   - factored: axis 1 computes (Σ_i float(y)·x_i)·f_r; axis 0 computes
//     Σ_i float(y)·(x_i·f_i) with x_i·f_i rounded to fp32 once per input.
// x is bf16 [M, in_features] row-major; outputs are [M, out_features]
// row-major (bf16: the fp32 result rounded to nearest even). The tensor view
// is borrowed; rows must be a multiple of 8 (SPEC §1).
//
// linear_reference_f64 is THE reference every kernel (CPU and CUDA) is tested
// against: y[m][o] = Σ_i double(W_canonical[o][i]) · double(x[m][i]), with
// W_canonical = expand_to_f32(w). It is slow and obviously right.
#pragma once
#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cpu {

void trellis_linear(const TrellisTensorView& w, Numerics mode, const uint16_t* x_bf16, int64_t M,
                    uint16_t* y_bf16);

void trellis_linear_f32(const TrellisTensorView& w, Numerics mode, const uint16_t* x_bf16,
                        int64_t M, float* y);

void linear_reference_f64(const TrellisTensorView& w, const float* x, int64_t M, double* y);

}  // namespace trellis::cpu
