// Linear layers as the CPU backend serves them, y[M, out] = x[M, in] · Wᵀ
// with fp32 activations:
//   dense bf16  the mapped tensor itself (zero-copy), dense_matmul;
//   dense fp32  the mapped tensor (zero-copy), or a fp32 copy made at load for
//               fp16 and for tensors not aligned to their element size;
//   trellis     the mapped codes and scales (zero-copy), served by
//               cpu::trellis_linear_f32 in Numerics::f32 on x rounded to
//               bf16; with a Hadamard rotation (SPEC §5) axis 1 computes
//               W'(H(s⊙x)) and axis 0 computes s⊙(H(W'x)).
// CpuGateUp is the pair gate/up with out = silu(x Gᵀ) ⊙ (x Uᵀ) in fp32.
// Load-time errors (trellis::Error) name the tensor: a dtype other than
// bf16/fp16/fp32, a shape that is not 2-D.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "thread_pool.hpp"
#include "trellis/model/backend.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::model::cpu {

class CpuLinear final : public LinearWeight {
 public:
  explicit CpuLinear(const LinearSource& src);
  void apply(ThreadPool& pool, const float* x, int64_t M, float* y) const;

 private:
  const uint16_t* bf16_ = nullptr;
  const float* f32_ = nullptr;
  std::vector<float> owned_f32_;
  std::optional<TrellisTensorView> trellis_;
  std::span<const int8_t> signs_;  // empty: no rotation
};

class CpuGateUp final : public GateUpWeight {
 public:
  CpuGateUp(const LinearSource& gate, const LinearSource& up);
  void apply(ThreadPool& pool, const float* x, int64_t M, float* y) const;

 private:
  CpuLinear gate_;
  CpuLinear up_;
};

}  // namespace trellis::model::cpu
