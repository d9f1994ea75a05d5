// Linear layers as the CUDA backend serves them, out[M, out] = x[M, in] · Wᵀ
// with fp32 activations in device memory (contract in
// trellis/model/cuda_backend.hpp):
//   trellis  codes/scales/signs on the device; x → bf16 (axis 1 with signs:
//            H(s ⊙ x) first), trellis::cuda::linear with default_form(geom, M)
//            and default_numerics, bf16 → fp32 (axis 0 with signs: s ⊙ H y);
//   dense    bf16 copy on the device (fp16/fp32 rounded at load); x split
//            into bf16 hi/lo rows, one cuBLAS GEMM [2M] with fp32 output,
//            the halves added.
// CudaGateUp: out = silu(x Gᵀ) ⊙ (x Uᵀ). Two trellis axis-1 layers with the
// same rows, cols, T, L and rotation (same signs, or none) run as one fused
// trellis::cuda::gate_up_swiglu call (tail `fused` on the tensor-core form,
// `split` on expand + cuBLAS); anything else as two linears and an fp32 tail.
// Load errors (trellis::Error) name the tensor.
#pragma once
#include <cstdint>
#include <optional>

#include "device_buffer.hpp"
#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/model/backend.hpp"

namespace trellis::model::cuda {

class CudaLinear final : public LinearWeight {
 public:
  explicit CudaLinear(const LinearSource& src);
  void apply(trellis::cuda::Context& ctx, Scratch& scratch, const float* x, int64_t M, float* out) const;

  bool is_trellis() const { return view_.has_value(); }
  const TrellisTensorView& view() const { return *view_; }
  const int8_t* signs() const { return signs_.get<int8_t>(); }
  // x [M, in] as the trellis kernels' bf16 input (rotated for axis 1 with signs).
  void kernel_input(cudaStream_t stream, const float* x, int64_t M, uint16_t* xb) const;

 private:
  DeviceBuffer dense_;  // bf16 [out, in]
  DeviceBuffer codes_, scales_, signs_;
  std::optional<TrellisTensorView> view_;
};

class CudaGateUp final : public GateUpWeight {
 public:
  CudaGateUp(const LinearSource& gate, const LinearSource& up);
  void apply(trellis::cuda::Context& ctx, Scratch& scratch, const float* x, int64_t M, float* out) const;

 private:
  CudaLinear gate_;
  CudaLinear up_;
  bool fused_;
};

}  // namespace trellis::model::cuda
