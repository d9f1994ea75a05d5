// The CUDA backend (src/cuda/model/): the Backend ops (backend.hpp) on one
// GPU, built when the build has CUDA (TRELLIS_HAVE_CUDA_BACKEND).
//
// Activations and the KV cache are fp32 in device memory (the residual
// stream stays fp32). Linear layers:
//   trellis  codes, scales and signs uploaded once; x rounded to bf16
//            (rotated first for axis 1 with signs) into the trellis kernels
//            (trellis/cuda/trellis_ops.hpp) with default_form(geometry, M)
//            (gate/up: default_gate_up_form) and its default numerics: the
//            CUDA-core forms for small matrices at small M, the tensor-core
//            forms up to M = 8, expand + cuBLAS above; the bf16 output
//            widened (un-rotated for axis 0); gate/up sharing their rotation
//            run as one fused call (tail `fused` on the tensor-core form,
//            `split` on the others)
//   dense    uploaded as bf16; x split into bf16 hi + lo rows and one cuBLAS
//            GEMM over both (fp32 accumulate), so fp32 activations meet bf16
//            weights at fp32 accuracy
// Options.trellis pins the numerics mode (SPEC §3), and with it the form,
// and the SwiGLU tail of every trellis layer, for the KL gates
// (tests/cuda/model_kl_test.cpp):
//   rounded   expand + cuBLAS (any M; split tail only)
//   f32       the CUDA-core forms: reduce (axis 1) / scatter (axis 0) for
//             M <= 4, the fused gate_up form for M <= 8
//   factored  the tensor-core forms (M <= 8)
// A call the pinned form cannot serve (M too large, a geometry it does not
// decode) is a trellis::Error naming the layer; dense layers ignore it.
//
// The fused ops (backend.hpp): qkv_rope converts x once for q, k and v when
// their kernel inputs are the same transform (no rotation, or one sign
// vector) and none un-rotates its output, and hands the three bf16 outputs
// to one QK-norm + RoPE kernel that also widens v; mlp hands the fused
// gate/up call's bf16 output to down's kernel as it is when down does not
// rotate its input; add_rmsnorm is one kernel. Other layers take the
// composition (with QK-norm and RoPE still one kernel where the heads allow).
// In a one-token step (Options.fuse_norms, TRELLIS_NORM_FUSION=0 for
// make_backend turns it off) the residual norm after o and after down is not
// a kernel of its own where the layer before it can produce it and the one
// after it can read it (trellis_ops.hpp: ResidualNormWrite, NormScale; no
// rotation on either side): the producer adds into the residual and writes
// bf16(x ⊙ w) and its Σx² partials, the reader scales its outputs by the
// norm's 1/rms. An op other than that reader first gets the norm launched.
// reserve() sizes the scratch of the linear layers (bf16 staging, the
// expand + cuBLAS buffers at the session's largest batch), the token ids
// and the decode attention's partials when a session is made, then (default
// numerics) runs layer 0's linears and the LM head once at that batch and at
// one row on zeros: cuBLAS's first call of a shape costs the host far more
// than the GPU work (a 512-token prompt of the 14B geometry on the H200:
// ≈ 250 ms cold, 50 ms after this warm-up).
//
// Decode steps (forwards of one token) are recorded op by op and run at the
// end of the step (to_host): the first step of a shape runs eagerly, the
// second is captured into a CUDA graph, later ones replay it with the token
// and position written to device memory. Options.graphs = false (or
// TRELLIS_CUDA_GRAPHS=0 for make_backend) runs every step eagerly.
//
// Options.profile times every op on the GPU (CUDA events around each op and
// each stage of a linear; graphs off, every step eager). Each forward starts
// with a short device-side hold (a kernel that waits) so the host has queued
// the forward's ops before the GPU reaches them: the events then time the
// kernels, not the host's launch gaps. cuda_profile() reports the sums per
// phase (prefill: forwards of M > 1 tokens; decode: one token) and per
// (op, part) as a table and as JSON (src/cuda/model/profile_report.cpp).
// Wall-clock speed is meaningless while profiling (the holds).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trellis/model/backend.hpp"
#include "trellis/numerics.hpp"

namespace trellis::model {

// Pinned numerics and SwiGLU tail of the trellis layers (unset: defaults).
struct CudaTrellisOptions {
  std::optional<Numerics> numerics;
  std::optional<SwigluTail> tail;
};

struct CudaBackendOptions {
  bool graphs = true;
  bool profile = false;
  // One-token steps split each in-layer residual norm between the trellis
  // layer before it and the one after (trellis_ops.hpp: ResidualNormWrite,
  // NormScale) where both kernels can, instead of launching it.
  bool fuse_norms = true;
  CudaTrellisOptions trellis = {};
};

struct CudaGraphStats {
  int64_t eager_steps = 0;  // one-token steps run without a graph
  int64_t captures = 0;     // graphs captured
  int64_t replays = 0;      // steps run by replaying a graph
  std::string disabled;     // why graphs are off (empty while on)
  // Summed over the one-token steps: the host's time from a step's first op
  // to its launch (the ops recorded, then the graph replayed or captured, or
  // the ops launched eagerly), and the time it then spent blocked waiting
  // for a step's result. The device has nothing of the step to run before
  // its launch, so host_seconds per step is GPU time lost per token unless
  // the previous step is still running (pipelined greedy decoding).
  double host_seconds = 0;
  double wait_seconds = 0;
};

// The profile as a text table and as one JSON object.
struct CudaProfileReport {
  std::string table;
  std::string json;
};

// True when a CUDA device is visible.
bool cuda_device_available();

// A trellis::Error when no CUDA device is visible.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options = {});

// The graph counters of a CUDA backend; nullopt for any other backend.
std::optional<CudaGraphStats> cuda_graph_stats(const Backend& backend);

// The op profile since the start or the last reset; nullopt unless `backend`
// is a CUDA backend made with options.profile.
std::optional<CudaProfileReport> cuda_profile(const Backend& backend);
// Forgets what was profiled so far (e.g. after a warm-up); no-op otherwise.
void reset_cuda_profile(Backend& backend);

}  // namespace trellis::model
