// Linear layers as the CUDA backend serves them, out[M, out] = x[M, in] · Wᵀ
// with fp32 activations in device memory (contract in
// trellis/model/cuda_backend.hpp):
//   trellis  codes/scales/signs on the device; x → bf16 (axis 1 with signs:
//            H(s ⊙ x) first), trellis::cuda::linear with the form and
//            numerics of trellis_form() below, bf16 → fp32 (axis 0 with
//            signs: s ⊙ H y);
//   dense    bf16 copy on the device (fp16/fp32 rounded at load); x split
//            into bf16 hi/lo rows, one cuBLAS GEMM [2M] with fp32 output,
//            the halves added.
// CudaGateUp: out = silu(x Gᵀ) ⊙ (x Uᵀ). Two trellis axis-1 layers with the
// same rows, cols, T, L and rotation (same signs, or none) run as one fused
// trellis::cuda::gate_up_swiglu call (default_gate_up_form; tail `fused` on
// the tensor-core form, `split` on the others); anything else as two linears
// and an fp32 tail.
// Form and numerics: CudaTrellisOptions.numerics pins them (rounded:
// expand_cublas; f32: reduce / scatter by axis, gate_up for the fused pair;
// factored: mma), else the trellis library's defaults by M; .tail pins the
// fused call's tail. A pinned form that cannot serve the call is a
// trellis::Error naming the layer. Load errors (trellis::Error) name the
// tensor.
// Each layer has a role (q, k, v, o, gate_up, down, lm_head: from its
// module name) under which the profiler, when given, times its stages.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "device_buffer.hpp"
#include "profiler.hpp"
#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/model/backend.hpp"
#include "trellis/model/cuda_backend.hpp"

namespace trellis::model::cuda {

// What a linear layer runs with: the trellis context and scratch of the
// backend, its pinned trellis options, the profiler (null: not profiling).
struct LinearRun {
  trellis::cuda::Context& ctx;
  Scratch& scratch;
  const CudaTrellisOptions& trellis;
  OpProfiler* profiler = nullptr;
};

class CudaLinear final : public LinearWeight {
 public:
  explicit CudaLinear(const LinearSource& src);
  void apply(const LinearRun& run, const float* x, int64_t M, float* out) const;

  bool is_trellis() const { return view_.has_value(); }
  const TrellisTensorView& view() const { return *view_; }
  const int8_t* signs() const { return signs_.get<int8_t>(); }
  const std::string& name() const { return name_; }
  const std::string& role() const { return role_; }
  // x [M, in] as the trellis kernels' bf16 input (rotated for axis 1 with
  // signs), timed under this layer's role.
  void kernel_input(const LinearRun& run, const float* x, int64_t M, uint16_t* xb) const;

 private:
  std::string name_, role_;
  DeviceBuffer dense_;  // bf16 [out, in]
  DeviceBuffer codes_, scales_, signs_;
  std::optional<TrellisTensorView> view_;
};

class CudaGateUp final : public GateUpWeight {
 public:
  CudaGateUp(const LinearSource& gate, const LinearSource& up);
  void apply(const LinearRun& run, const float* x, int64_t M, float* out) const;

 private:
  CudaLinear gate_;
  CudaLinear up_;
  bool fused_;
};

}  // namespace trellis::model::cuda
