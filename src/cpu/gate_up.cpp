// Gate/up/SwiGLU on the CPU (contract in trellis/cpu/gate_up.hpp): both
// projections in fp32 via trellis_linear_f32, each rounded to bf16 exactly as
// trellis_linear rounds, then the selected tail per element.
#include "trellis/cpu/gate_up.hpp"

#include <vector>

#include "trellis/cpu/linear.hpp"
#include "trellis/cpu/swiglu.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::cpu {

void gate_up_swiglu(const TrellisTensorView& gate, const TrellisTensorView& up, Numerics mode,
                    SwigluTail tail, const uint16_t* x_bf16, int64_t M, uint16_t* out_bf16) {
  if (gate.geom.in_features != up.geom.in_features || gate.geom.out_features != up.geom.out_features)
    throw Error("cpu::gate_up_swiglu: gate and up must have the same in/out features");
  const size_t n = size_t(M * gate.geom.out_features);
  std::vector<float> g(n), u(n);
  trellis_linear_f32(gate, mode, x_bf16, M, g.data());
  trellis_linear_f32(up, mode, x_bf16, M, u.data());
  const auto element = tail == SwigluTail::split ? swiglu_split : swiglu_fused;
  for (size_t i = 0; i < n; ++i) out_bf16[i] = element(float_to_bf16(g[i]), float_to_bf16(u[i]));
}

}  // namespace trellis::cpu
