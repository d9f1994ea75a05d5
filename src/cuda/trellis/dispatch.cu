// The public entry points: check that the chosen form can serve the call,
// take the scratch it needs from the context, and launch it.
#include <cublas_v2.h>

#include <string>

#include "cuda_check.hpp"
#include "cuda_core_kernels.cuh"
#include "kernels.cuh"
#include "launch_constants.cuh"
#include "trellis/cuda/trellis_ops.hpp"

namespace trellis::cuda {

using detail::check_cuda;

const char* to_string(Form f) {
  switch (f) {
    case Form::reduce: return "reduce";
    case Form::scatter: return "scatter";
    case Form::gate_up: return "gate_up";
    case Form::mma: return "mma";
    case Form::imma: return "imma";
    case Form::expand_cublas: return "expand_cublas";
  }
  return "?";
}

namespace {

bool decodable(const TrellisGeometry& g) { return g.k >= 2 && g.k <= 4 && g.L > g.k && g.L <= 16 && g.T % 32 == 0; }

// The tensor-core forms decode T = 256 blocks (compile-time shifts and
// offsets); axis 1 stages all of x in shared memory (fp16: M rows of cols + 32
// halves; bytes: 2M rows of cols + 16 words, exact int32 sums for cols <= 16384;
// axis 0 stages row segments the plan sizes to fit).
bool tensor_core_geometry(const TrellisGeometry& g) {
  return decodable(g) && g.T == 256 && g.rows % 8 == 0 && g.cols % 256 == 0;
}
bool mma_fits(const TrellisGeometry& g, int M) {
  return tensor_core_geometry(g) &&
         (g.axis == 0 || std::size_t(M) * (g.cols + 32) * 2 <= std::size_t(kAxis1StageBytes));
}
bool imma_fits(const TrellisGeometry& g, int M) {
  return tensor_core_geometry(g) &&
         (g.axis == 0 || (g.cols <= 16384 && std::size_t(2 * M) * (g.cols + 16) * 4 <= std::size_t(kAxis1StageBytes)));
}

void require(bool ok, Form f, const TrellisGeometry& g, int M, Numerics mode, const char* op) {
  if (ok) return;
  throw Error(std::string(op) + ": form " + to_string(f) + " cannot serve k=" + std::to_string(g.k) +
              " L=" + std::to_string(g.L) + " T=" + std::to_string(g.T) + " axis=" + std::to_string(g.axis) +
              " rows=" + std::to_string(g.rows) + " cols=" + std::to_string(g.cols) + " M=" + std::to_string(M) +
              " numerics=" + to_string(mode));
}

detail::SplitScratch scratch(Context& ctx, std::size_t partial_floats, std::size_t counters) {
  return {ctx.partials(partial_floats), ctx.counters(counters)};
}

void gemm_bf16(Context& ctx, const uint16_t* w, const uint16_t* x, int M, int out, int in, uint16_t* y) {
  const float one = 1.0f, zero = 0.0f;
  const auto st = cublasGemmEx(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_T, CUBLAS_OP_N, out, M, in, &one,
                               w, CUDA_R_16BF, in, x, CUDA_R_16BF, in, &zero, y, CUDA_R_16BF, out, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) throw Error("cuBLAS: cublasGemmEx failed (" + std::to_string(int(st)) + ")");
}

void linear_expand_cublas(Context& ctx, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* y) {
  const auto& g = w.geom;
  uint16_t* wb = ctx.expanded(std::size_t(g.out_features) * g.in_features);
  detail::launch_expand_bf16(w, wb, ctx.sm_count(), ctx.stream());
  gemm_bf16(ctx, wb, x, M, int(g.out_features), int(g.in_features), y);
}

void linear_mma(Context& ctx, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* y, bool bytes,
                const ResidualNormWrite& residual, const NormScale& scale) {
  const auto& g = w.geom;
  if (g.axis == 1 && bytes && detail::wgmma_axis1_serves(g, 1, M, ctx.cc_major())) {
    const auto plan = detail::plan_wgmma_axis1(g, 1, M, ctx.sm_count());
    detail::launch_wgmma_axis1(plan, &w, 1, x, M, y, SwigluTail::split, scratch(ctx, 0, plan.counters),
                               ctx.stream(), scale);
  } else if (g.axis == 1) {
    const auto plan = detail::plan_mma_axis1(g, 1, M, ctx.sm_count(), bytes);
    detail::launch_mma_axis1(plan, &w, 1, x, M, y, SwigluTail::split, scratch(ctx, plan.partial_floats, plan.counters),
                             ctx.stream(), scale);
  } else if (bytes) {
    const auto plan = detail::plan_imma_axis0(g, M, ctx.sm_count());
    detail::launch_imma_axis0(plan, w, x, M, y, scratch(ctx, plan.split.partial_floats, plan.split.col_tiles),
                              ctx.stream(), residual);
  } else {
    const auto plan = detail::plan_mma_axis0(g, M, ctx.sm_count());
    detail::launch_mma_axis0(plan, w, x, M, y, scratch(ctx, plan.split.partial_floats, plan.split.col_tiles),
                             ctx.stream(), residual);
  }
}

// The residual norm's halves (trellis_ops.hpp) are asked of forms that have them.
void require_norm_fusion(Form f, const TrellisGeometry& g, int M, const ResidualNormWrite& residual,
                         const NormScale& scale, const char* op) {
  if (residual.x && !writes_residual_norm(f, g, M))
    throw Error(std::string(op) + ": form " + to_string(f) + " at axis " + std::to_string(g.axis) +
                " cannot write a residual norm (reduce at axis 1, mma or imma at axis 0; M = 1), got M=" +
                std::to_string(M));
  if (scale.partials && !takes_norm_scale(f, g, M))
    throw Error(std::string(op) + ": form " + to_string(f) + " at axis " + std::to_string(g.axis) +
                " cannot read a residual norm's scale (reduce and gate_up, or imma at axis 1; M = 1), got M=" +
                std::to_string(M));
  if (scale.partials && (scale.count < 1 || scale.n < 1))
    throw Error(std::string(op) + ": a norm scale needs at least one partial and a width, got count=" +
                std::to_string(scale.count) + " n=" + std::to_string(scale.n));
}

}  // namespace

bool form_supports(Form f, const TrellisGeometry& g, int M, Numerics mode) {
  switch (f) {
    case Form::mma: return mode == Numerics::factored && M >= 1 && M <= kMmaMaxM && mma_fits(g, M);
    case Form::imma: return mode == Numerics::factored && M >= 1 && M <= kImmaMaxM && imma_fits(g, M);
    case Form::expand_cublas: return mode == Numerics::rounded && M >= 1 && decodable(g);
    case Form::reduce: return g.axis == 1 && M >= 1 && M <= 4 && decodable(g);
    case Form::scatter: return g.axis == 0 && M >= 1 && M <= 4 && decodable(g);
    case Form::gate_up: return g.axis == 1 && M >= 1 && M <= 8 && decodable(g);
  }
  return false;
}

bool writes_residual_norm(Form f, const TrellisGeometry& g, int M) {
  if (M != 1) return false;
  if (f == Form::reduce) return g.axis == 1 && decodable(g);
  return (f == Form::mma || f == Form::imma) && g.axis == 0 && tensor_core_geometry(g);
}

bool takes_norm_scale(Form f, const TrellisGeometry& g, int M) {
  if (M != 1) return false;
  if (f == Form::reduce || f == Form::gate_up) return g.axis == 1 && decodable(g);
  return f == Form::imma && g.axis == 1 && imma_fits(g, M);
}

int residual_norm_partials(Form f, const TrellisGeometry& g, int sm_count) {
  return f == Form::reduce ? detail::reduce_blocks(g, 1, sm_count) : int(g.cols / kBlockT);
}

// Measured on the H200 (bench/results/h200_trellis_kernels.json): the
// one-warp-per-row CUDA-core form beats the tensor-core form on small axis-1
// matrices at small M (k/v 1024x5120 up to M = 4, q/o 5120x5120 up to M = 2),
// where the tensor-core form's block-wide staging is not amortised.
Form default_form(const TrellisGeometry& g, int M) {
  const double weights = double(g.rows) * double(g.cols);
  const bool small = (M <= 4 && weights <= 8.0e6) || (M <= 2 && weights <= 3.2e7);
  if (g.axis == 1 && small && form_supports(Form::reduce, g, M, Numerics::f32)) return Form::reduce;
  const Form tc = tensor_core_form(g, M);
  return form_supports(tc, g, M, Numerics::factored) ? tc : Form::expand_cublas;
}

Form default_gate_up_form(const TrellisGeometry& gate, const TrellisGeometry& up, int M) {
  const Form f = default_form(gate, M) == Form::reduce ? Form::gate_up : tensor_core_gate_up_form(gate, up, M);
  const bool ok = form_supports(f, gate, M, default_numerics(f)) && form_supports(f, up, M, default_numerics(f));
  return ok ? f : Form::expand_cublas;
}

Form tensor_core_form(const TrellisGeometry& g, int M) {
  return form_supports(Form::imma, g, M, Numerics::factored) ? Form::imma : Form::mma;
}

Form tensor_core_gate_up_form(const TrellisGeometry& gate, const TrellisGeometry& up, int M) {
  return tensor_core_form(gate, M) == Form::imma && tensor_core_form(up, M) == Form::imma ? Form::imma : Form::mma;
}

// Every form that can accumulate the raw code values does (factored: f_r once
// per output, so the CUDA-core forms spend no multiply per weight on it);
// expand + cuBLAS rounds each weight to bf16.
Numerics default_numerics(Form f) {
  return f == Form::expand_cublas ? Numerics::rounded : Numerics::factored;
}

void linear(Context& ctx, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* y, Form form,
            Numerics mode, const ResidualNormWrite& residual, const NormScale& scale) {
  require(form != Form::gate_up && form_supports(form, w.geom, M, mode), form, w.geom, M, mode, "linear");
  require_norm_fusion(form, w.geom, M, residual, scale, "linear");
  switch (form) {
    case Form::mma: linear_mma(ctx, w, x, M, y, false, residual, scale); break;
    case Form::imma: linear_mma(ctx, w, x, M, y, true, residual, scale); break;
    case Form::expand_cublas: linear_expand_cublas(ctx, w, x, M, y); break;
    case Form::reduce:
      detail::launch_reduce(&w, 1, x, M, y, mode, SwigluTail::split, ctx.sm_count(), ctx.stream(), residual, scale);
      break;
    case Form::scatter: {
      const auto plan = detail::plan_scatter(w.geom, M, ctx.sm_count());
      detail::launch_scatter(plan, w, x, M, y, mode, scratch(ctx, plan.partial_floats, plan.counters),
                             ctx.stream());
      break;
    }
    case Form::gate_up: break;
  }
  check_cuda(cudaGetLastError(), "linear launch");
}

void linear_group(Context& ctx, const LinearCall* calls, int n, const uint16_t* x, int M, const NormScale& scale) {
  bool stack = n >= 1 && n <= detail::kReduceMaxParts;
  TrellisTensorView w[detail::kReduceMaxParts];
  uint16_t* y[detail::kReduceMaxParts];
  for (int i = 0; stack && i < n; ++i) {
    const LinearCall& c = calls[i];
    stack = c.form == Form::reduce && c.mode == calls[0].mode && form_supports(c.form, c.w->geom, M, c.mode);
    w[i] = *c.w;
    y[i] = c.y;
  }
  if (stack && detail::reduce_stacks(w, n)) {
    for (int i = 0; i < n; ++i) require_norm_fusion(calls[i].form, w[i].geom, M, {}, scale, "linear_group");
    detail::launch_reduce_stacked(w, n, x, M, y, calls[0].mode, ctx.sm_count(), ctx.stream(), scale);
    check_cuda(cudaGetLastError(), "linear_group launch");
    return;
  }
  for (int i = 0; i < n; ++i) linear(ctx, *calls[i].w, x, M, calls[i].y, calls[i].form, calls[i].mode, {}, scale);
}

void gate_up_swiglu(Context& ctx, const TrellisTensorView& gate, const TrellisTensorView& up, const uint16_t* x,
                    int M, uint16_t* out, Form form, Numerics mode, SwigluTail tail, const NormScale& scale) {
  const auto& g = gate.geom;
  const auto& u = up.geom;
  if (g.axis != 1 || u.axis != 1 || g.rows != u.rows || g.cols != u.cols || g.T != u.T || g.L != u.L)
    throw Error("gate_up_swiglu: gate and up must share axis-1 geometry (rows, cols, T, L); only k may differ");
  const bool fused_form = form == Form::mma || form == Form::imma || form == Form::gate_up;
  require(form_supports(form, g, M, mode) && form_supports(form, u, M, mode) &&
              (fused_form || form == Form::expand_cublas || form == Form::reduce),
          form, g, M, mode, "gate_up_swiglu");
  require_norm_fusion(form, g, M, {}, scale, "gate_up_swiglu");
  require_norm_fusion(form, u, M, {}, scale, "gate_up_swiglu");
  const TrellisTensorView w[2] = {gate, up};
  switch (form) {
    case Form::imma:
      if (detail::wgmma_axis1_serves(g, 2, M, ctx.cc_major())) {
        const auto plan = detail::plan_wgmma_axis1(g, 2, M, ctx.sm_count());
        detail::launch_wgmma_axis1(plan, w, 2, x, M, out, tail, scratch(ctx, 0, plan.counters),
                                   ctx.stream(), scale);
        break;
      }
      [[fallthrough]];
    case Form::mma: {
      const auto plan = detail::plan_mma_axis1(g, 2, M, ctx.sm_count(), form == Form::imma);
      detail::launch_mma_axis1(plan, w, 2, x, M, out, tail, scratch(ctx, plan.partial_floats, plan.counters),
                               ctx.stream(), scale);
      break;
    }
    case Form::gate_up:
      detail::launch_reduce(w, 2, x, M, out, mode, tail, ctx.sm_count(), ctx.stream(), {}, scale);
      break;
    default: {
      // Unfused: two projections into scratch, then the standalone swiglu.
      if (tail != SwigluTail::split)
        throw Error("gate_up_swiglu: the unfused form " + std::string(to_string(form)) + " has only the split tail");
      const std::size_t n = std::size_t(M) * g.rows;
      uint16_t* tmp = ctx.staged(2 * n);
      linear(ctx, gate, x, M, tmp, form, mode, {}, scale);
      linear(ctx, up, x, M, tmp + n, form, mode, {}, scale);
      detail::launch_swiglu(tmp, tmp + n, out, n, ctx.sm_count(), ctx.stream());
    }
  }
  check_cuda(cudaGetLastError(), "gate_up_swiglu launch");
}

void swiglu(Context& ctx, const uint16_t* gate, const uint16_t* up, uint16_t* out, std::size_t n) {
  detail::launch_swiglu(gate, up, out, n, ctx.sm_count(), ctx.stream());
  check_cuda(cudaGetLastError(), "swiglu launch");
}

void expand_bf16(Context& ctx, const TrellisTensorView& w, uint16_t* out) {
  detail::launch_expand_bf16(w, out, ctx.sm_count(), ctx.stream());
  check_cuda(cudaGetLastError(), "expand launch");
}

}  // namespace trellis::cuda
