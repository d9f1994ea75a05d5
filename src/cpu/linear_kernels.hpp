// The two CPU trellis linear loops, on fp32 activations xf [M, in]:
//   linear_axis1 ("reduce"):  y[m][o] = Σ_i w(o, i)·xf[m][i]   (factored: then ·f_o)
//   linear_axis0 ("scatter"): y[m][o] = Σ_i w(i, o)·xf[m][i]   (factored: xf already x_i·f_i)
// with w in the mode's per-weight form (run_decode.hpp), one fp32
// accumulator per output, i ascending. y is fp32 [M, out]. Shapes are checked
// by the caller (linear.cpp).
#pragma once
#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cpu {

void linear_axis1(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y);
void linear_axis0(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y);

}  // namespace trellis::cpu
