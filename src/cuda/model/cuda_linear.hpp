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
//
// The stages are public for the fused ops (cuda_backend.cpp), which chain
// them through bf16 buffers: kernel_input (fp32 x → the kernels' bf16
// input), kernel (bf16 → bf16: the trellis form), kernel_output (bf16 → fp32
// out). Layers whose kernel_input is the same transform (shares_input: no
// rotation on either, or the same T and sign vector) can share one input.
// Sign vectors are interned by a SignTable at load: equal vectors are one
// device buffer, so sharing is a pointer comparison.
// scratch_need(M) is what calls of up to M rows take from Scratch and from
// the trellis Context (the backend reserves it; Context's split-K partials
// for M <= 8 are sized by the first call instead).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

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

// Sign vectors on the device, one buffer per distinct vector.
class SignTable {
 public:
  std::shared_ptr<const DeviceBuffer> intern(std::span<const int8_t> signs);

 private:
  std::map<std::vector<int8_t>, std::weak_ptr<const DeviceBuffer>> buffers_;
};

// Bytes per Scratch slot, and elements of the Context's staged and expanded
// buffers; merge() keeps the larger of each.
struct ScratchNeed {
  std::array<std::size_t, std::size_t(Slot::count)> slot_bytes{};
  std::size_t staged = 0, expanded = 0;
  void slot(Slot s, std::size_t bytes);
  void merge(const ScratchNeed& o);
};

class CudaLinear final : public LinearWeight {
 public:
  CudaLinear(const LinearSource& src, SignTable& signs);
  // out = x Wᵀ, fp32 in and out.
  void apply(const LinearRun& run, const float* x, int64_t M, float* out) const;

  bool is_trellis() const { return view_.has_value(); }
  const TrellisTensorView& view() const { return *view_; }
  const int8_t* signs() const { return signs_ ? signs_->get<int8_t>() : nullptr; }
  const std::string& name() const { return name_; }
  const std::string& role() const { return role_; }
  // Trellis layers only: axis 1 with signs (kernel_input rotates), axis 0
  // with signs (kernel_output un-rotates).
  bool rotates_input() const { return is_trellis() && view_->geom.axis == 1 && signs_; }
  bool rotates_output() const { return is_trellis() && view_->geom.axis == 0 && signs_; }
  bool shares_input(const CudaLinear& o) const;
  // Trellis layers only, each stage timed under the layer's role:
  // x [M, in] as the kernels' bf16 input (rotated for axis 1 with signs);
  void kernel_input(const LinearRun& run, const float* x, int64_t M, uint16_t* xb) const;
  // yb [M, out] = xb Wᵀ in the form and numerics of linear_form (bf16);
  // with a scale, times the residual norm's s (trellis_ops.hpp: a reader);
  void kernel(const LinearRun& run, const uint16_t* xb, int64_t M, uint16_t* yb,
              const trellis::cuda::NormScale& scale = {}) const;
  // yb[i] [M, out_i] = xb layers[i]ᵀ for layers that share their input (a
  // layer's q, k, v): trellis::cuda::linear_group, one launch where their forms
  // allow (timed under the first layer's role, its part naming the others).
  static void kernel_group(const LinearRun& run, std::span<const CudaLinear* const> layers, const uint16_t* xb,
                           int64_t M, std::span<uint16_t* const> yb, const trellis::cuda::NormScale& scale = {});
  // The residual norm split across launches (trellis_ops.hpp): whether this
  // layer's kernel at M rows, in the form it would run, can be the producer
  // (no output rotation) or a reader, and the producer's call (yb not
  // written) and partial count.
  bool writes_residual_norm(const CudaTrellisOptions& options, int64_t M) const;
  bool takes_norm_scale(const CudaTrellisOptions& options, int64_t M) const;
  int residual_norm_partials(const CudaTrellisOptions& options, int sm_count) const;
  void kernel_residual_norm(const LinearRun& run, const uint16_t* xb, int64_t M,
                            const trellis::cuda::ResidualNormWrite& residual) const;
  // out [M, out] = yb as fp32 (un-rotated for axis 0 with signs).
  void kernel_output(const LinearRun& run, const uint16_t* yb, int64_t M, float* out) const;
  ScratchNeed scratch_need(int64_t M, const CudaTrellisOptions& options) const;

 private:
  // Whether the form this layer runs at M rows serves the call and passes `can`.
  bool form_can(const CudaTrellisOptions& options, int64_t M,
                bool (*can)(trellis::cuda::Form, const TrellisGeometry&, int)) const;

  std::string name_, role_;
  DeviceBuffer dense_;  // bf16 [out, in]
  DeviceBuffer codes_, scales_;
  std::shared_ptr<const DeviceBuffer> signs_;  // interned; null: no rotation
  std::optional<TrellisTensorView> view_;
};

class CudaGateUp final : public GateUpWeight {
 public:
  CudaGateUp(const LinearSource& gate, const LinearSource& up, SignTable& signs);
  // out = silu(x Gᵀ) ⊙ (x Uᵀ), fp32 in and out.
  void apply(const LinearRun& run, const float* x, int64_t M, float* out) const;

  // One fused trellis call (then the stages below serve).
  bool fused() const { return fused_; }
  const CudaLinear& gate() const { return gate_; }
  // Fused only: x [M, in] as the kernels' bf16 input; yb [M, out] =
  // silu(xb Gᵀ) ⊙ (xb Uᵀ) in bf16 (form, numerics and tail as above).
  void kernel_input(const LinearRun& run, const float* x, int64_t M, uint16_t* xb) const;
  void kernel(const LinearRun& run, const uint16_t* xb, int64_t M, uint16_t* yb,
              const trellis::cuda::NormScale& scale = {}) const;
  // Whether the fused call at M rows can be a residual-norm reader.
  bool takes_norm_scale(const CudaTrellisOptions& options, int64_t M) const;
  ScratchNeed scratch_need(int64_t M, const CudaTrellisOptions& options) const;

 private:
  CudaLinear gate_;
  CudaLinear up_;
  bool fused_;
};

}  // namespace trellis::model::cuda
