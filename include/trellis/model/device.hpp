// Devices a model can run on, and the backend for each. The CPU backend is
// always built; "cuda" is the CUDA backend (trellis/model/cuda_backend.hpp)
// in a build with CUDA (TRELLIS_CUDA_GRAPHS=0 in the environment turns its
// decode-step graphs off), else a trellis::Error.
#pragma once
#include <memory>
#include <string_view>

#include "trellis/model/backend.hpp"

namespace trellis::model {

enum class Device { cpu, cuda };

// "cpu" or "cuda"; anything else is a trellis::Error naming it.
Device parse_device(std::string_view name);
std::unique_ptr<Backend> make_backend(Device device);

}  // namespace trellis::model
