// The CUDA backend (src/cuda/model/): the Backend ops (backend.hpp) on one
// GPU, built when the build has CUDA (TRELLIS_HAVE_CUDA_BACKEND).
//
// Activations and the KV cache are fp32 in device memory (the residual
// stream stays fp32). Linear layers:
//   trellis  codes, scales and signs uploaded once; x rounded to bf16
//            (rotated first for axis 1 with signs) into the trellis kernels
//            (trellis/cuda/trellis_ops.hpp) with default_form(geometry, M) and
//            its default numerics: the tensor-core forms for M ≤ 8, expand +
//            cuBLAS above; the bf16 output widened (un-rotated for axis 0);
//            gate/up sharing their rotation run as one fused call
//   dense    uploaded as bf16; x split into bf16 hi + lo rows and one cuBLAS
//            GEMM over both (fp32 accumulate), so fp32 activations meet bf16
//            weights at fp32 accuracy
// Decode steps (forwards of one token) are recorded op by op and run at the
// end of the step (to_host): the first step of a shape runs eagerly, the
// second is captured into a CUDA graph, later ones replay it with the token
// and position written to device memory. Options.graphs = false (or
// TRELLIS_CUDA_GRAPHS=0 for make_backend) runs every step eagerly.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trellis/model/backend.hpp"

namespace trellis::model {

struct CudaBackendOptions {
  bool graphs = true;
};

struct CudaGraphStats {
  int64_t eager_steps = 0;  // one-token steps run without a graph
  int64_t captures = 0;     // graphs captured
  int64_t replays = 0;      // steps run by replaying a graph
  std::string disabled;     // why graphs are off (empty while on)
};

// True when a CUDA device is visible.
bool cuda_device_available();

// A trellis::Error when no CUDA device is visible.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options = {});

// The graph counters of a CUDA backend; nullopt for any other backend.
std::optional<CudaGraphStats> cuda_graph_stats(const Backend& backend);

}  // namespace trellis::model
