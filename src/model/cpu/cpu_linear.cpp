// CpuLinear and CpuGateUp (contract in cpu_linear.hpp).
#include "cpu_linear.hpp"

#include <cmath>
#include <string>

#include "dense_matmul.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::model::cpu {
namespace {

bool aligned(const std::byte* p, std::size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

std::vector<uint16_t> to_bf16(const float* x, size_t n) {
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16(x[i]);
  return out;
}

}  // namespace

CpuLinear::CpuLinear(const LinearSource& src) : LinearWeight(src.in_features(), src.out_features()) {
  if (src.trellis) {
    trellis_ = src.trellis->view();
    signs_ = src.trellis->sign_values();
    return;
  }
  const format::TensorInfo& t = *src.dense;
  if (t.shape.size() != 2)
    throw Error(t.source + ": tensor '" + t.name + "': a linear weight must be 2-D, got " +
                format::shape_string(t.shape));
  using format::DType;
  if (t.dtype == DType::BF16 && aligned(t.data.data(), 2))
    bf16_ = reinterpret_cast<const uint16_t*>(t.data.data());
  else if (t.dtype == DType::F32 && aligned(t.data.data(), 4))
    f32_ = reinterpret_cast<const float*>(t.data.data());
  else
    f32_ = (owned_f32_ = t.to_f32("a linear layer (or a trellis tensor)")).data();
}

void CpuLinear::apply(ThreadPool& pool, const float* x, int64_t M, float* y) const {
  if (bf16_) return matmul_bf16(pool, bf16_, out_features, in_features, x, M, y);
  if (f32_) return matmul_f32(pool, f32_, out_features, in_features, x, M, y);
  const TrellisGeometry& g = trellis_->geom;
  const size_t n = size_t(M * in_features);
  std::vector<uint16_t> xb;
  if (g.axis == 1 && !signs_.empty()) {
    std::vector<float> xr(x, x + n);
    rotate_rows(xr.data(), M, in_features, signs_.data(), g.T);
    xb = to_bf16(xr.data(), n);
  } else {
    xb = to_bf16(x, n);
  }
  trellis::cpu::trellis_linear_f32(*trellis_, Numerics::f32, xb.data(), M, y);
  if (g.axis == 0 && !signs_.empty()) unrotate_rows(y, M, out_features, signs_.data(), g.T);
}

CpuGateUp::CpuGateUp(const LinearSource& gate, const LinearSource& up)
    : GateUpWeight(gate.in_features(), gate.out_features()), gate_(gate), up_(up) {
  if (up_.in_features != in_features || up_.out_features != out_features)
    throw Error("gate/up pair '" + gate.name + "' / '" + up.name + "': shapes differ");
}

void CpuGateUp::apply(ThreadPool& pool, const float* x, int64_t M, float* y) const {
  std::vector<float> u(size_t(M * out_features));
  gate_.apply(pool, x, M, y);
  up_.apply(pool, x, M, u.data());
  for (size_t i = 0; i < u.size(); ++i) y[i] = y[i] / (1.0f + std::exp(-y[i])) * u[i];
}

}  // namespace trellis::model::cpu
