// The fp64 reference every trellis kernel is tested against:
//   W = expand_to_f32(w)  (canonical fp32 weights, logical [out, in]),
//   y[m][o] = Σ_i double(W[o][i]) · double(x[m][i]).
// Deliberately the plainest possible code: no threads, no tricks.
#include <cstddef>
#include <vector>

#include "trellis/codec/expand.hpp"
#include "trellis/cpu/linear.hpp"

namespace trellis::cpu {

void linear_reference_f64(const TrellisTensorView& w, const float* x, int64_t M, double* y) {
  const int64_t in = w.geom.in_features, out = w.geom.out_features;
  std::vector<float> W(size_t(in * out));
  expand_to_f32(w, W.data());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0.0;
      for (int64_t i = 0; i < in; ++i) s += double(W[size_t(o * in + i)]) * double(x[m * in + i]);
      y[m * out + o] = s;
    }
}

}  // namespace trellis::cpu
