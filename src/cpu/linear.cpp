// Entry points of the CPU trellis linear (contract in trellis/cpu/linear.hpp):
// check the view, widen x to fp32 once (axis 0 factored: x_i·f_i, the
// activation-side fold of the row factor), run the axis's loop, and round to
// bf16 for the bf16-output form.
#include "trellis/cpu/linear.hpp"

#include <string>
#include <vector>

#include "linear_kernels.hpp"
#include "run_decode.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::cpu {

namespace {

void require(bool ok, const std::string& rule) {
  if (!ok) throw Error("cpu::trellis_linear: " + rule);
}

void check_view(const TrellisTensorView& w, int64_t M) {
  const TrellisGeometry& g = w.geom;
  require(M >= 0, "M must be >= 0");
  require(g.k >= 1 && g.k <= 8, "k must be in 1..8");
  require(g.L > g.k && g.L <= 16, "L must satisfy k < L <= 16");
  require(g.T > 0 && g.T % 32 == 0, "T must be a positive multiple of 32");
  require(g.axis == 0 || g.axis == 1, "axis must be 0 or 1");
  require(g.rows == (g.axis == 1 ? g.out_features : g.in_features) &&
              g.cols == (g.axis == 1 ? g.in_features : g.out_features),
          "rows/cols do not match the axis and in/out features");
  require(g.rows > 0 && g.rows % 8 == 0, "rows must be a positive multiple of 8");
  require(g.cols > 0 && g.cols % g.T == 0, "cols must be a positive multiple of T");
  require(g.block_interleave == 0 ||
              (g.block_interleave == 2 && g.axis == 0 && g.k == 3 && g.T == 256 && g.cols % 512 == 0),
          "block interleave 2 needs axis 0, k = 3, T = 256, cols a multiple of 512");
  require(w.codes != nullptr && w.scales != nullptr, "codes and scales must be set");
}

std::vector<float> widen_activations(const TrellisTensorView& w, Numerics mode, const uint16_t* x,
                                     int64_t M) {
  const int64_t in = w.geom.in_features;
  std::vector<float> xf(size_t(M * in));
  const bool fold = w.geom.axis == 0 && mode == Numerics::factored;
  for (int64_t i = 0; i < in; ++i) {
    const float f = fold ? stored_row_factor(w, i) : 1.0f;
    for (int64_t m = 0; m < M; ++m) {
      const float v = bf16_to_float(x[m * in + i]);
      xf[size_t(m * in + i)] = fold ? v * f : v;
    }
  }
  return xf;
}

}  // namespace

void trellis_linear_f32(const TrellisTensorView& w, Numerics mode, const uint16_t* x_bf16,
                        int64_t M, float* y) {
  check_view(w, M);
  if (M == 0) return;
  const std::vector<float> xf = widen_activations(w, mode, x_bf16, M);
  if (w.geom.axis == 1)
    linear_axis1(w, mode, xf.data(), M, y);
  else
    linear_axis0(w, mode, xf.data(), M, y);
}

void trellis_linear(const TrellisTensorView& w, Numerics mode, const uint16_t* x_bf16, int64_t M,
                    uint16_t* y_bf16) {
  std::vector<float> y(size_t(M * w.geom.out_features));
  trellis_linear_f32(w, mode, x_bf16, M, y.data());
  for (size_t i = 0; i < y.size(); ++i) y_bf16[i] = float_to_bf16(y[i]);
}

}  // namespace trellis::cpu
