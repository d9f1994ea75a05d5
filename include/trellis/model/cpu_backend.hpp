// The CPU backend: fp32 activations in host memory, dense weights served
// from the mapped files (bf16 zero-copy), trellis weights through
// cpu::trellis_linear_f32 (Numerics::f32), persistent worker threads sized
// by trellis::cpu::thread_count() when the backend is made.
#pragma once
#include <memory>

#include "trellis/model/backend.hpp"

namespace trellis::model {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace trellis::model
