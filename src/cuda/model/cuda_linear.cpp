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

// q, k, v, o, gate_up, down, lm_head from a module name (the tied LM head is
// model.embed_tokens); else the name's last component.
std::string role_of(const std::string& name) {
  const std::string last = name.substr(name.rfind('.') + 1);
  if (last == "q_proj" || last == "k_proj" || last == "v_proj" || last == "o_proj") return last.substr(0, 1);
  if (last == "gate_proj" || last == "up_proj") return "gate_up";
  if (last == "down_proj") return "down";
  if (last == "lm_head" || last == "embed_tokens") return "lm_head";
  return last;
}

[[noreturn]] void cannot_serve(const std::string& layer, tc::Form form, Numerics mode, int64_t M,
                               const TrellisGeometry& g, const char* why = "") {
  throw Error("cuda backend: layer '" + layer + "': pinned numerics " + to_string(mode) + " (form " +
              tc::to_string(form) + ") cannot serve M=" + std::to_string(M) + " with axis=" + std::to_string(g.axis) +
              " k=" + std::to_string(g.k) + " L=" + std::to_string(g.L) + " T=" + std::to_string(g.T) +
              " rows=" + std::to_string(g.rows) + " cols=" + std::to_string(g.cols) + why);
}

// The form and numerics of one trellis linear (cuda_linear.hpp), unchecked.
std::pair<tc::Form, Numerics> choose_linear_form(const TrellisGeometry& g, int64_t M, const CudaTrellisOptions& o) {
  if (!o.numerics) {
    const tc::Form f = tc::default_form(g, int(M));
    return {f, tc::default_numerics(f)};
  }
  const Numerics mode = *o.numerics;
  const tc::Form f = mode == Numerics::rounded ? tc::Form::expand_cublas
                     : mode == Numerics::factored ? tc::tensor_core_form(g, int(M))
                     : g.axis == 1                ? tc::Form::reduce
                                                  : tc::Form::scatter;
  return {f, mode};
}

// The same, a trellis::Error naming the layer when a pinned form cannot serve.
std::pair<tc::Form, Numerics> linear_form(const std::string& layer, const TrellisGeometry& g, int64_t M,
                                          const CudaTrellisOptions& o) {
  const auto [f, mode] = choose_linear_form(g, M, o);
  if (o.numerics && !tc::form_supports(f, g, int(M), mode)) cannot_serve(layer, f, mode, M, g);
  return {f, mode};
}

// The fused gate/up call's form, numerics and tail, unchecked.
struct GateUpCall {
  tc::Form form;
  Numerics mode;
  SwigluTail tail;
};
GateUpCall choose_gate_up_form(const TrellisGeometry& gg, const TrellisGeometry& ug, int64_t M,
                               const CudaTrellisOptions& o) {
  tc::Form form = tc::default_gate_up_form(gg, ug, int(M));
  if (o.numerics)
    form = *o.numerics == Numerics::rounded   ? tc::Form::expand_cublas
           : *o.numerics == Numerics::factored ? tc::tensor_core_gate_up_form(gg, ug, int(M))
                                               : tc::Form::gate_up;
  const Numerics mode = o.numerics.value_or(tc::default_numerics(form));
  const bool tensor_cores = form == tc::Form::mma || form == tc::Form::imma;
  return {form, mode, o.tail.value_or(tensor_cores ? SwigluTail::fused : SwigluTail::split)};
}

std::string kernel_part(tc::Form f, Numerics mode) {
  return std::string("trellis ") + tc::to_string(f) + "/" + to_string(mode);
}

}  // namespace

std::shared_ptr<const DeviceBuffer> SignTable::intern(std::span<const int8_t> signs) {
  std::erase_if(buffers_, [](const auto& entry) { return entry.second.expired(); });
  std::vector<int8_t> key(signs.begin(), signs.end());
  if (const auto it = buffers_.find(key); it != buffers_.end())
    if (auto shared = it->second.lock()) return shared;
  auto buffer = std::make_shared<const DeviceBuffer>(signs.data(), signs.size());
  buffers_[std::move(key)] = buffer;
  return buffer;
}

void ScratchNeed::slot(Slot s, std::size_t bytes) {
  std::size_t& have = slot_bytes[std::size_t(s)];
  have = std::max(have, bytes);
}

void ScratchNeed::merge(const ScratchNeed& o) {
  for (std::size_t i = 0; i < slot_bytes.size(); ++i) slot_bytes[i] = std::max(slot_bytes[i], o.slot_bytes[i]);
  staged = std::max(staged, o.staged);
  expanded = std::max(expanded, o.expanded);
}

CudaLinear::CudaLinear(const LinearSource& src, SignTable& signs)
    : LinearWeight(src.in_features(), src.out_features()), name_(src.name), role_(role_of(src.name)) {
  if (src.trellis) {
    const format::TrellisTensor& t = *src.trellis;
    const TrellisTensorView host = t.view();
    codes_ = DeviceBuffer(host.codes, size_t(host.geom.total_words()) * 4);
    scales_ = DeviceBuffer(host.scales, size_t(host.geom.rows) * 2);
    if (const auto s = t.sign_values(); !s.empty()) signs_ = signs.intern(s);
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

bool CudaLinear::shares_input(const CudaLinear& o) const {
  if (!is_trellis() || !o.is_trellis() || in_features != o.in_features || rotates_input() != o.rotates_input())
    return false;
  return !rotates_input() || (signs_ == o.signs_ && view_->geom.T == o.view_->geom.T);
}

void CudaLinear::kernel_input(const LinearRun& run, const float* x, int64_t M, uint16_t* xb) const {
  const TrellisGeometry& g = view_->geom;
  const cudaStream_t stream = run.ctx.stream();
  if (rotates_input())
    timed(run.profiler, role_, "hadamard+to_bf16",
          [&] { launch_rotate_to_bf16(x, signs(), M, in_features, g.T, xb, stream); });
  else
    timed(run.profiler, role_, "to_bf16", [&] { launch_f32_to_bf16(x, xb, M * in_features, stream); });
}

void CudaLinear::kernel(const LinearRun& run, const uint16_t* xb, int64_t M, uint16_t* yb,
                        const tc::NormScale& scale) const {
  const auto [form, mode] = linear_form(name_, view_->geom, M, run.trellis);
  timed(run.profiler, role_, kernel_part(form, mode) + (scale.partials ? ", norm scale" : ""),
        [&] { tc::linear(run.ctx, *view_, xb, int(M), yb, form, mode, {}, scale); });
}

bool CudaLinear::form_can(const CudaTrellisOptions& options, int64_t M,
                          bool (*can)(tc::Form, const TrellisGeometry&, int)) const {
  if (!is_trellis()) return false;
  const auto [form, mode] = choose_linear_form(view_->geom, M, options);
  return tc::form_supports(form, view_->geom, int(M), mode) && can(form, view_->geom, int(M));
}

bool CudaLinear::writes_residual_norm(const CudaTrellisOptions& options, int64_t M) const {
  return !rotates_output() && form_can(options, M, tc::writes_residual_norm);
}

bool CudaLinear::takes_norm_scale(const CudaTrellisOptions& options, int64_t M) const {
  return form_can(options, M, tc::takes_norm_scale);
}

int CudaLinear::residual_norm_partials(const CudaTrellisOptions& options, int sm_count) const {
  return tc::residual_norm_partials(choose_linear_form(view_->geom, 1, options).first, view_->geom, sm_count);
}

void CudaLinear::kernel_residual_norm(const LinearRun& run, const uint16_t* xb, int64_t M,
                                      const tc::ResidualNormWrite& residual) const {
  const auto [form, mode] = linear_form(name_, view_->geom, M, run.trellis);
  timed(run.profiler, role_, kernel_part(form, mode) + ", add+norm partials",
        [&] { tc::linear(run.ctx, *view_, xb, int(M), nullptr, form, mode, residual); });
}

void CudaLinear::kernel_group(const LinearRun& run, std::span<const CudaLinear* const> layers, const uint16_t* xb,
                              int64_t M, std::span<uint16_t* const> yb, const tc::NormScale& scale) {
  std::vector<tc::LinearCall> calls;
  std::string part;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const CudaLinear& l = *layers[i];
    const auto [form, mode] = linear_form(l.name_, l.view_->geom, M, run.trellis);
    calls.push_back({&*l.view_, yb[i], form, mode});
    part += i == 0 ? kernel_part(form, mode) : (i == 1 ? " with " : ", ") + l.role_;
  }
  if (calls.empty()) return;
  if (scale.partials) part += ", norm scale";
  timed(run.profiler, layers[0]->role_, part,
        [&] { tc::linear_group(run.ctx, calls.data(), int(calls.size()), xb, int(M), scale); });
}

void CudaLinear::kernel_output(const LinearRun& run, const uint16_t* yb, int64_t M, float* out) const {
  const cudaStream_t stream = run.ctx.stream();
  if (rotates_output())
    timed(run.profiler, role_, "hadamard+to_f32",
          [&] { launch_unrotate_to_f32(yb, signs(), M, out_features, view_->geom.T, out, stream); });
  else
    timed(run.profiler, role_, "to_f32", [&] { launch_bf16_to_f32(yb, out, M * out_features, stream); });
}

void CudaLinear::apply(const LinearRun& run, const float* x, int64_t M, float* out) const {
  const cudaStream_t stream = run.ctx.stream();
  if (!view_) {
    uint16_t* x2 = run.scratch.get<uint16_t>(Slot::x_bf16, size_t(2 * M * in_features));
    float* y2 = run.scratch.get<float>(Slot::y_f32, size_t(2 * M * out_features));
    timed(run.profiler, role_, "split_bf16",
          [&] { launch_split_bf16(x, M * in_features, x2, x2 + M * in_features, stream); });
    timed(run.profiler, role_, "cublas bf16 (hi+lo rows)",
          [&] { gemm_bf16_f32(run.ctx, dense_.get<uint16_t>(), x2, 2 * M, out_features, in_features, y2); });
    timed(run.profiler, role_, "add_halves",
          [&] { launch_add_halves(y2, y2 + M * out_features, M * out_features, out, stream); });
    return;
  }
  uint16_t* xb = run.scratch.get<uint16_t>(Slot::x_bf16, size_t(M * in_features));
  uint16_t* yb = run.scratch.get<uint16_t>(Slot::y_bf16, size_t(M * out_features));
  kernel_input(run, x, M, xb);
  kernel(run, xb, M, yb);
  kernel_output(run, yb, M, out);
}

ScratchNeed CudaLinear::scratch_need(int64_t M, const CudaTrellisOptions& options) const {
  ScratchNeed n;
  const auto rows = std::size_t(M);
  if (!view_) {
    n.slot(Slot::x_bf16, 2 * rows * std::size_t(in_features) * 2);
    n.slot(Slot::y_f32, 2 * rows * std::size_t(out_features) * 4);
    return n;
  }
  n.slot(Slot::x_bf16, rows * std::size_t(in_features) * 2);
  n.slot(Slot::y_bf16, rows * std::size_t(out_features) * 2);
  if (choose_linear_form(view_->geom, M, options).first == tc::Form::expand_cublas)
    n.expanded = std::size_t(out_features) * std::size_t(in_features);
  return n;
}

CudaGateUp::CudaGateUp(const LinearSource& gate, const LinearSource& up, SignTable& signs)
    : GateUpWeight(gate.in_features(), gate.out_features()), gate_(gate, signs), up_(up, signs) {
  if (up_.in_features != in_features || up_.out_features != out_features)
    throw Error("gate/up pair '" + gate.name + "' / '" + up.name + "': shapes differ");
  fused_ = false;
  if (gate.trellis && up.trellis) {
    const TrellisGeometry &g = gate.trellis->geom, &u = up.trellis->geom;
    fused_ = g.axis == 1 && u.axis == 1 && g.rows == u.rows && g.cols == u.cols && g.T == u.T && g.L == u.L &&
             gate_.shares_input(up_);
  }
}

void CudaGateUp::kernel_input(const LinearRun& run, const float* x, int64_t M, uint16_t* xb) const {
  gate_.kernel_input(run, x, M, xb);
}

bool CudaGateUp::takes_norm_scale(const CudaTrellisOptions& options, int64_t M) const {
  if (!fused_) return false;
  const TrellisGeometry &gg = gate_.view().geom, &ug = up_.view().geom;
  const GateUpCall c = choose_gate_up_form(gg, ug, M, options);
  return tc::form_supports(c.form, gg, int(M), c.mode) && tc::form_supports(c.form, ug, int(M), c.mode) &&
         tc::takes_norm_scale(c.form, gg, int(M)) && tc::takes_norm_scale(c.form, ug, int(M));
}

void CudaGateUp::kernel(const LinearRun& run, const uint16_t* xb, int64_t M, uint16_t* yb,
                        const tc::NormScale& scale) const {
  const TrellisGeometry &gg = gate_.view().geom, &ug = up_.view().geom;
  const CudaTrellisOptions& o = run.trellis;
  const auto [form, mode, tail] = choose_gate_up_form(gg, ug, M, o);
  if (o.numerics && !(tc::form_supports(form, gg, int(M), mode) && tc::form_supports(form, ug, int(M), mode)))
    cannot_serve(gate_.name(), form, mode, M, gg, " (the fused gate/up call)");
  if (form == tc::Form::expand_cublas && tail == SwigluTail::fused)
    cannot_serve(gate_.name(), form, mode, M, gg, ": expand + cuBLAS has only the split tail");
  timed(run.profiler, gate_.role(), kernel_part(form, mode) + "/" + to_string(tail) + (scale.partials ? ", norm scale" : ""),
        [&] { tc::gate_up_swiglu(run.ctx, gate_.view(), up_.view(), xb, int(M), yb, form, mode, tail, scale); });
}

void CudaGateUp::apply(const LinearRun& run, const float* x, int64_t M, float* out) const {
  const cudaStream_t stream = run.ctx.stream();
  if (!fused_) {
    float* g = run.scratch.get<float>(Slot::gate_f32, size_t(M * out_features));
    float* u = run.scratch.get<float>(Slot::up_f32, size_t(M * out_features));
    gate_.apply(run, x, M, g);
    up_.apply(run, x, M, u);
    timed(run.profiler, gate_.role(), "swiglu_f32", [&] { launch_swiglu_f32(g, u, M * out_features, out, stream); });
    return;
  }
  uint16_t* xb = run.scratch.get<uint16_t>(Slot::x_bf16, size_t(M * in_features));
  uint16_t* yb = run.scratch.get<uint16_t>(Slot::y_bf16, size_t(M * out_features));
  kernel_input(run, x, M, xb);
  kernel(run, xb, M, yb);
  timed(run.profiler, gate_.role(), "to_f32", [&] { launch_bf16_to_f32(yb, out, M * out_features, stream); });
}

ScratchNeed CudaGateUp::scratch_need(int64_t M, const CudaTrellisOptions& options) const {
  if (!fused_) {
    ScratchNeed n = gate_.scratch_need(M, options);
    n.merge(up_.scratch_need(M, options));
    n.slot(Slot::gate_f32, std::size_t(M) * std::size_t(out_features) * 4);
    n.slot(Slot::up_f32, std::size_t(M) * std::size_t(out_features) * 4);
    return n;
  }
  ScratchNeed n;
  const auto rows = std::size_t(M);
  n.slot(Slot::x_bf16, rows * std::size_t(in_features) * 2);
  n.slot(Slot::y_bf16, rows * std::size_t(out_features) * 2);
  if (choose_gate_up_form(gate_.view().geom, up_.view().geom, M, options).form == tc::Form::expand_cublas) {
    n.expanded = std::size_t(out_features) * std::size_t(in_features);
    n.staged = 2 * rows * std::size_t(out_features);
  }
  return n;
}

}  // namespace trellis::model::cuda
