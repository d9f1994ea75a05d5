// CudaLinear and CudaGateUp (contract in cuda_linear.hpp).
#include "cuda_linear.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis::model::cuda {
namespace {

namespace tc = trellis::cuda;

// The dense tensor as bf16 (bf16 as is; fp16 and fp32 rounded).
std::vector<uint16_t> dense_bf16(const format::TensorInfo& t) {
  std::vector<uint16_t> out(size_t(t.numel()));
  const std::byte* p = t.data.data();
  using format::DType;
  if (t.dtype == DType::BF16) {
    std::memcpy(out.data(), p, out.size() * 2);
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == DType::F32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out[i] = float_to_bf16(f);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = float_to_bf16(fp16_to_float(h));
    }
  }
  return out;
}

void gemm_bf16_f32(tc::Context& ctx, const uint16_t* w, const uint16_t* x, int64_t rows, int64_t out, int64_t in,
                   float* y) {
  const float one = 1.0f, zero = 0.0f;
  const auto st = cublasGemmEx(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_T, CUBLAS_OP_N, int(out),
                               int(rows), int(in), &one, w, CUDA_R_16BF, int(in), x, CUDA_R_16BF, int(in), &zero, y,
                               CUDA_R_32F, int(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error("cuda backend: cublasGemmEx (dense linear) failed with status " + std::to_string(int(st)));
}

bool same_signs(const LinearSource& a, const LinearSource& b) {
  const auto sa = a.trellis->sign_values(), sb = b.trellis->sign_values();
  return sa.size() == sb.size() && std::equal(sa.begin(), sa.end(), sb.begin());
}

}  // namespace

CudaLinear::CudaLinear(const LinearSource& src) : LinearWeight(src.in_features(), src.out_features()) {
  if (src.trellis) {
    const format::TrellisTensor& t = *src.trellis;
    const TrellisTensorView host = t.view();
    codes_ = DeviceBuffer(host.codes, size_t(host.geom.total_words()) * 4);
    scales_ = DeviceBuffer(host.scales, size_t(host.geom.rows) * 2);
    if (const auto s = t.sign_values(); !s.empty()) signs_ = DeviceBuffer(s.data(), s.size());
    view_ = TrellisTensorView{codes_.get<uint32_t>(), scales_.get<uint16_t>(), host.geom};
    return;
  }
  const format::TensorInfo& t = *src.dense;
  using format::DType;
  if (t.shape.size() != 2)
    throw Error(t.source + ": tensor '" + t.name + "': a linear weight must be 2-D, got " +
                format::shape_string(t.shape));
  if (t.dtype != DType::BF16 && t.dtype != DType::F16 && t.dtype != DType::F32)
    throw Error(t.source + ": tensor '" + t.name + "': dtype " + std::string(format::dtype_display_name(t.dtype)) +
                " is not supported for a linear layer (bf16, fp16, fp32 or trellis)");
  if (t.dtype == DType::BF16) {
    dense_ = DeviceBuffer(t.data.data(), size_t(t.numel()) * 2);
  } else {
    const std::vector<uint16_t> b = dense_bf16(t);
    dense_ = DeviceBuffer(b.data(), b.size() * 2);
  }
}

void CudaLinear::kernel_input(cudaStream_t stream, const float* x, int64_t M, uint16_t* xb) const {
  const TrellisGeometry& g = view_->geom;
  if (g.axis == 1 && signs())
    launch_rotate_to_bf16(x, signs(), M, in_features, g.T, xb, stream);
  else
    launch_f32_to_bf16(x, xb, M * in_features, stream);
}

void CudaLinear::apply(tc::Context& ctx, Scratch& scratch, const float* x, int64_t M, float* out) const {
  const cudaStream_t stream = ctx.stream();
  if (!view_) {
    uint16_t* x2 = scratch.get<uint16_t>(Slot::x_bf16, size_t(2 * M * in_features));
    float* y2 = scratch.get<float>(Slot::y_f32, size_t(2 * M * out_features));
    launch_split_bf16(x, M * in_features, x2, x2 + M * in_features, stream);
    gemm_bf16_f32(ctx, dense_.get<uint16_t>(), x2, 2 * M, out_features, in_features, y2);
    launch_add_halves(y2, y2 + M * out_features, M * out_features, out, stream);
    return;
  }
  const TrellisGeometry& g = view_->geom;
  uint16_t* xb = scratch.get<uint16_t>(Slot::x_bf16, size_t(M * in_features));
  uint16_t* yb = scratch.get<uint16_t>(Slot::y_bf16, size_t(M * out_features));
  kernel_input(stream, x, M, xb);
  const tc::Form form = tc::default_form(g, int(M));
  tc::linear(ctx, *view_, xb, int(M), yb, form, tc::default_numerics(form));
  if (g.axis == 0 && signs())
    launch_unrotate_to_f32(yb, signs(), M, out_features, g.T, out, stream);
  else
    launch_bf16_to_f32(yb, out, M * out_features, stream);
}

CudaGateUp::CudaGateUp(const LinearSource& gate, const LinearSource& up)
    : GateUpWeight(gate.in_features(), gate.out_features()), gate_(gate), up_(up) {
  if (up_.in_features != in_features || up_.out_features != out_features)
    throw Error("gate/up pair '" + gate.name + "' / '" + up.name + "': shapes differ");
  fused_ = false;
  if (gate.trellis && up.trellis) {
    const TrellisGeometry &g = gate.trellis->geom, &u = up.trellis->geom;
    fused_ = g.axis == 1 && u.axis == 1 && g.rows == u.rows && g.cols == u.cols && g.T == u.T && g.L == u.L &&
             same_signs(gate, up);
  }
}

void CudaGateUp::apply(tc::Context& ctx, Scratch& scratch, const float* x, int64_t M, float* out) const {
  const cudaStream_t stream = ctx.stream();
  if (!fused_) {
    float* g = scratch.get<float>(Slot::gate_f32, size_t(M * out_features));
    float* u = scratch.get<float>(Slot::up_f32, size_t(M * out_features));
    gate_.apply(ctx, scratch, x, M, g);
    up_.apply(ctx, scratch, x, M, u);
    launch_swiglu_f32(g, u, M * out_features, out, stream);
    return;
  }
  uint16_t* xb = scratch.get<uint16_t>(Slot::x_bf16, size_t(M * in_features));
  uint16_t* yb = scratch.get<uint16_t>(Slot::y_bf16, size_t(M * out_features));
  gate_.kernel_input(stream, x, M, xb);
  tc::Form form = tc::default_form(gate_.view().geom, int(M));
  if (!tc::form_supports(form, up_.view().geom, int(M), tc::default_numerics(form))) form = tc::Form::expand_cublas;
  const SwigluTail tail = form == tc::Form::mma ? SwigluTail::fused : SwigluTail::split;
  tc::gate_up_swiglu(ctx, gate_.view(), up_.view(), xb, int(M), yb, form, tc::default_numerics(form), tail);
  launch_bf16_to_f32(yb, out, M * out_features, stream);
}

}  // namespace trellis::model::cuda
