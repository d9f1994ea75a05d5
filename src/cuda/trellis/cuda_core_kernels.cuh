// Launchers of the CUDA-core trellis kernel forms (reduce, scatter, expand,
// the standalone bf16 swiglu), internal to the CUDA backend; dispatch.cu
// chooses among these and the tensor-core forms (kernels.cuh).
//
// Also the one device helper the CUDA-core forms share: the code value as an
// fp32 number, from the 1MAD hash in three instructions (IMAD, IDP4A, FADD):
// IDP4A sums the hash's bytes onto the bit pattern of 2^23, whose ulp is 1,
// so the result reads as the float 2^23 + bytesum; subtracting 2^23 + 510
// leaves y exactly.
#pragma once
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

#include <cstddef>
#include <cstdint>

#include "kernels.cuh"
#include "trellis/code.hpp"
#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda::detail {

// ---- reduce (axis 1, CUDA cores): see reduce.cu ----------------------------
// nproj == 1: out = W x, w[0] the projection, M 1..4.
// nproj == 2: out = swiglu_tail(gate x, up x), w[0] gate, w[1] up (same rows,
//             cols, T and axis 1; k and L may differ), M 1..8.
// x bf16 [M][in], out bf16 [M][out]; any Numerics mode; `tail` ignored for nproj 1.
// No scratch; capturable. At M = 1 one projection may be a residual-norm
// producer (residual.x: out not written; reduce_blocks(...) partials), and
// any call a reader (scale.partials), trellis_ops.hpp.
void launch_reduce(const TrellisTensorView* w, int nproj, const uint16_t* x, int M, uint16_t* out, Numerics mode,
                   SwigluTail tail, int sm_count, cudaStream_t stream, const ResidualNormWrite& residual = {},
                   const NormScale& scale = {});
int reduce_blocks(const TrellisGeometry& g, int M, int sm_count);  // of one projection's launch
// Stacked: parts (1..kReduceMaxParts) one-projection calls on the same x (a
// layer's q, k, v; rows may differ, cols, T, k and L the same: reduce_stacks)
// in one launch, out[p] = w[p] x, each bit for bit as its own launch would
// give; M 1..4.
inline constexpr int kReduceMaxParts = 3;
bool reduce_stacks(const TrellisTensorView* w, int parts);
void launch_reduce_stacked(const TrellisTensorView* w, int parts, const uint16_t* x, int M, uint16_t* const* out,
                           Numerics mode, int sm_count, cudaStream_t stream, const NormScale& scale = {});

// ---- scatter (axis 0, CUDA cores): see scatter.cu --------------------------
struct ScatterPlan {
  int positions;     // code positions per lane (32 for M <= 2, 16 for M 3..4)
  int tiles;         // column tiles of 32·positions stored columns
  int segments;      // split-K segments over stored rows (1: no partials)
  int rows_per_segment;
  int blocks;        // persistent blocks of 8 warps
  std::size_t partial_floats;  // segments·cols·M when segments > 1, else 0
  int counters;                // tiles when segments > 1, else 0 (left zero after each launch)
};
ScatterPlan plan_scatter(const TrellisGeometry& g, int M, int sm_count);
// out[m][c] = Σ_r w_rc·x[m][r]; x bf16 [M][in_features], out bf16 [M][out_features];
// row-major or k3 block-pair interleaved codes; M 1..4.
void launch_scatter(const ScatterPlan& plan, const TrellisTensorView& w, const uint16_t* x, int M, uint16_t* out,
                    Numerics mode, SplitScratch scratch, cudaStream_t stream);

// ---- expand: see expand.cu --------------------------------------------------
// Logical W [out_features, in_features] row-major, bf16_rn(float(y)·f_r), any axis/layout.
void launch_expand_bf16(const TrellisTensorView& w, uint16_t* out, int sm_count, cudaStream_t stream);

// ---- standalone bf16 swiglu: see swiglu_op.cu ------------------------------
void launch_swiglu(const uint16_t* gate, const uint16_t* up, uint16_t* out, std::size_t n, int sm_count,
                   cudaStream_t stream);

#if defined(__CUDACC__)
// y(state) as an exact fp32 integer in [-510, 510].
__device__ __forceinline__ float code_float(uint32_t state) {
  return __int_as_float(int(__dp4a(code_hash(state), 0x01010101u, 0x4B000000u))) - 8389118.0f;
}

// Round two fp32 values to bf16 with one CVT (bf16x2), back to fp32.
__device__ __forceinline__ void round_bf16_pair(float& a, float& b) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(a, b);
  a = __low2float(p);
  b = __high2float(p);
}

// The two bf16 halves of a 32-bit word as fp32 (low half = lower address).
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
#endif

}  // namespace trellis::cuda::detail
