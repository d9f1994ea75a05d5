// Devices a model can run on, and the backend for each. The CPU backend is
// always built; "cuda" is the CUDA backend (trellis/model/cuda_backend.hpp)
// in a build with CUDA, else a trellis::Error. Environment of make_backend
// for "cuda":
//   TRELLIS_CUDA_GRAPHS=0    decode steps run eagerly (no CUDA graphs)
//   TRELLIS_PROFILE=FILE     every op timed on the GPU (CUDA events, no
//                            graphs); report_profile() prints the table and
//                            writes the JSON to FILE
//   TRELLIS_NORM_FUSION=0    every residual norm of a decode step launched
//                            (CudaBackendOptions.fuse_norms off)
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "trellis/model/backend.hpp"

namespace trellis::model {

enum class Device { cpu, cuda };

// "cpu" or "cuda"; anything else is a trellis::Error naming it.
Device parse_device(std::string_view name);
std::unique_ptr<Backend> make_backend(Device device);

// Whether `backend` profiles its ops (a CUDA backend made under TRELLIS_PROFILE).
bool profiling(const Backend& backend);
// Forgets the profile so far (after a warm-up); no-op when not profiling.
void reset_profile(Backend& backend);
// When profiling: prints the op table to stderr and writes the JSON to
// $TRELLIS_PROFILE (a trellis::Error when it cannot be written). Else no-op.
void report_profile(const Backend& backend);
// A CUDA backend's one-token steps so far, for a stats line: how many replayed a
// graph and how many ran eagerly, and per step the host's time before the
// launch and its wait for a step's result (CudaGraphStats).
// Empty for any other backend and before the first step.
std::string step_report(const Backend& backend);

}  // namespace trellis::model
