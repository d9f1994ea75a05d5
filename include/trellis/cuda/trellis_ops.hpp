// CUDA trellis kernels: the public entry points (SPEC §4).
//
// Every function borrows device pointers: weights through TrellisTensorView
// (codes, fp16 scales on the device), activations x [M, in_features] bf16,
// outputs [M, out_features] bf16. The kernel form and the numerics mode are
// explicit arguments; default_form() is the choice by M, axis and k that the
// layer uses when no qualification table says otherwise. All launches go to
// `stream` and are CUDA-graph capturable once the context's scratch has been
// reserved for the largest call (reserve()).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda {

enum class Form {
  reduce,         // axis 1, CUDA cores, M 1..4: one warp per output row
  scatter,        // axis 0, CUDA cores, M 1..4: split-K over stored rows
  gate_up,        // fused gate/up/SwiGLU on CUDA cores, M 1..8
  mma,            // tensor cores, M 1..8: each weight decoded once for all rows
  imma,           // tensor cores, M 1..4: the MMA sums each weight's hash bytes (int8 x fixed-point x)
  expand_cublas,  // decode to bf16, then cuBLAS: any M, always correct
};
const char* to_string(Form f);

// Scratch owned per stream: split-K partials and arrival counters, staged
// activations, the bf16 expansion buffer, the cuBLAS handle.
class Context {
 public:
  explicit Context(cudaStream_t stream = nullptr);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  // Grow scratch so calls up to these sizes allocate nothing (graph capture).
  void reserve(std::size_t partial_floats, std::size_t counters, std::size_t staged_halves,
               std::size_t expand_elems);
  float* partials(std::size_t n);
  unsigned* counters(std::size_t n);  // zeroed on allocation; kernels leave them zero
  uint16_t* staged(std::size_t n);
  uint16_t* expanded(std::size_t n);
  void* cublas();
  int sm_count() const { return sm_count_; }
  int cc_major() const { return cc_major_; }  // compute capability (9: Hopper's warpgroup MMAs)

 private:
  cudaStream_t stream_;
  int sm_count_ = 0;
  int cc_major_ = 0;
  float* partials_ = nullptr;
  std::size_t partials_n_ = 0;
  unsigned* counters_ = nullptr;
  std::size_t counters_n_ = 0;
  uint16_t* staged_ = nullptr;
  std::size_t staged_n_ = 0;
  uint16_t* expanded_ = nullptr;
  std::size_t expanded_n_ = 0;
  void* cublas_ = nullptr;
};

// The residual RMSNorm of a decode step (M = 1), split between the launch
// that makes a layer's output y (the producer) and the launch that reads the
// normalised row (the reader), so that the norm needs no launch of its own:
//   producer, per output i:  x_i += fp32(bf16(y_i))     (the fp32 residual, in place)
//                            image_i = bf16(x_i · w_i)   (the reader's input, not yet normalised)
//            per block b:    partials[b] = Σ x_i² over its outputs (fp64)
//   reader:                  s = 1 / √(Σ_b partials[b] / n + eps)  (Σ in fp64, the root in fp32)
//                            out = s · (W image)  (gate and up each before SwiGLU)
// The projections are linear in their input, so the reader's outputs are
// those of W applied to bf16((x·s) ⊙ w), the unfused norm's image, up to that
// image's rounding (bf16(x ⊙ w)·s against bf16((x·s) ⊙ w)); x itself is the
// unfused add's bit for bit. The producer does not write y.
struct ResidualNormWrite {
  float* x = nullptr;          // [out_features] fp32 residual; null: no residual epilogue
  const float* w = nullptr;    // [out_features] the norm's weight
  uint16_t* image = nullptr;   // [out_features] bf16(x ⊙ w)
  double* partials = nullptr;  // residual_norm_partials(...) sums of squares
};
struct NormScale {
  const double* partials = nullptr;  // the producer's; null: no scale
  int count = 0;                     // how many (residual_norm_partials)
  int n = 0;                         // the norm's width (the reader's in_features)
  float eps = 0;
};

// Which calls can be a residual-norm producer (reduce at axis 1, the
// tensor-core forms at axis 0; M = 1) or reader (reduce and gate_up, and imma
// at axis 1 including its fused gate/up; M = 1), and how many partials a
// producer writes.
bool writes_residual_norm(Form f, const TrellisGeometry& g, int M);
bool takes_norm_scale(Form f, const TrellisGeometry& g, int M);
int residual_norm_partials(Form f, const TrellisGeometry& g, int sm_count);

// y = W x for one trellis tensor (axis 0 or 1, either layout). With
// residual.x the call is a residual-norm producer (y is not written; needs
// writes_residual_norm); with scale.partials a reader (takes_norm_scale).
void linear(Context& ctx, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* y, Form form,
            Numerics mode, const ResidualNormWrite& residual = {}, const NormScale& scale = {});

// y = W x for n trellis tensors that read the same x (a layer's q, k, v),
// each call in its own form and numerics: one launch where every call
// is the reduce form in one mode and the tensors stack (at most 3, the same
// cols, T, k and L), else one linear() per call. The results are linear()'s
// bit for bit either way. A scale makes every call a residual-norm reader.
struct LinearCall {
  const TrellisTensorView* w;
  uint16_t* y;
  Form form;
  Numerics mode;
};
void linear_group(Context& ctx, const LinearCall* calls, int n, const uint16_t* x, int M, const NormScale& scale = {});

// out = silu(gate(x)) · up(x); gate and up share axis-1 geometry except k.
// A scale makes the call a residual-norm reader (takes_norm_scale of both).
void gate_up_swiglu(Context& ctx, const TrellisTensorView& gate, const TrellisTensorView& up,
                    const uint16_t* x, int M, uint16_t* out, Form form, Numerics mode, SwigluTail tail,
                    const NormScale& scale = {});

// Standalone bf16 swiglu (the `split` tail's arithmetic): out = silu(g)·u, n elements.
void swiglu(Context& ctx, const uint16_t* gate, const uint16_t* up, uint16_t* out, std::size_t n);

// Whole tensor to bf16, logical W [out_features, in_features] row-major.
void expand_bf16(Context& ctx, const TrellisTensorView& w, uint16_t* out);

// Which forms can serve this call, and the default choice.
bool form_supports(Form f, const TrellisGeometry& g, int M, Numerics mode);
Form default_form(const TrellisGeometry& g, int M);  // for linear()
Form default_gate_up_form(const TrellisGeometry& gate, const TrellisGeometry& up, int M);
// The tensor-core form (numerics factored) for this call: imma where it
// serves (both geometries for gate/up), else mma.
Form tensor_core_form(const TrellisGeometry& g, int M);
Form tensor_core_gate_up_form(const TrellisGeometry& gate, const TrellisGeometry& up, int M);
Numerics default_numerics(Form f);  // factored, but rounded for expand_cublas

}  // namespace trellis::cuda
