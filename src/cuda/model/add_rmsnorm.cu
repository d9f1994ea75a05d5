// RMSNorm, with or without the residual add before it, in one pass (the
// forward's rmsnorm and add_rmsnorm; the CPU backend's add then rmsnorm,
// arithmetic for arithmetic), over groups of n consecutive elements (a layer
// norm: the row; Qwen3's QK-norm: a head):
//   x     = x + y                           (fp32, stored: the residual stream)
//   scale = fp32(1 / sqrt(Σ x² / n + eps))  (sum and root in fp64)
//   out   = (x · scale) · w                 (fp32, no contraction)
// y is fp32, or the bf16 output of a trellis layer read as it is (widening is
// exact), un-rotated first when y_signs is given: y = (H_T float(y) · 1/√T) ⊙ s
// per T-block, the arithmetic of unrotate_to_f32. Null y: no add, x is only
// read and out may be x (in place). With `image` the kernel also writes the
// next trellis layer's bf16 input: bf16(out), or with image_signs
// bf16(H_T(s ⊙ out) · 1/√T), the arithmetic of rotate_to_bf16. So the values
// equal those of the separate conversion kernels bit for bit.
// Each thread owns elements tid + j·threads; the first kHeld of them (x, y
// and w) are loaded together, before any store, and stay in registers between
// the sum and the output, so the block waits on memory once. Rotations use a
// row of n floats in shared memory.
// With y, out must not alias x or y. Launch: one block per group,
// norm_threads(n) threads (norm_reduce.cuh); allocates nothing (CUDA-graph
// capturable).
#include <cmath>
#include <string>

#include "butterflies.cuh"
#include "device_math.cuh"
#include "launch_check.hpp"
#include "norm_reduce.cuh"
#include "trellis/error.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kHeld = 8;  // n <= 8 · 1024 (an 8192-wide row) stays in registers

struct Scales {
  float y = 0, image = 0;  // fp32(1/√T) of each rotation
};

__global__ void add_rmsnorm_kernel(const AddRmsNormArgs a, const Scales norm) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  extern __shared__ float row[];
  const int threads = int(blockDim.x), n = a.n, tid = int(threadIdx.x);
  const int64_t base = int64_t(blockIdx.x) * n;
  float* r = a.x + base;
  const float* yf = static_cast<const float*>(a.y) + base;
  const uint16_t* yb = static_cast<const uint16_t*>(a.y) + base;
  if (a.y_signs) {
    for (int i = tid; i < n; i += threads) row[i] = bf16_bits_to_float(yb[i]);
    hadamard_butterflies(row, n, a.y_T);
    // Each thread reads back only the elements it writes here.
    for (int i = tid; i < n; i += threads) row[i] = (row[i] * norm.y) * float(a.y_signs[i]);
  }
  // y's element i as fp32 (null y: not called).
  const auto y_at = [&](int i) {
    return a.y_signs ? row[i] : a.y_bf16 ? bf16_bits_to_float(yb[i]) : yf[i];
  };
  const auto add_y = [&](int i) {
    if (!a.y) return r[i];
    const float v = __fadd_rn(r[i], y_at(i));
    r[i] = v;
    return v;
  };

  // The held elements' loads all come before their stores: x, y and w may
  // alias as far as the compiler knows, so a store between two loads would
  // make each element wait on memory in turn.
  double ss = 0;
  float held_v[kHeld], held_w[kHeld], held_y[kHeld];
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const int i = tid + j * threads;
    if (i < n) {
      held_v[j] = r[i];
      held_w[j] = a.w[i];
      held_y[j] = a.y ? y_at(i) : 0.0f;
    }
  }
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const int i = tid + j * threads;
    if (i < n) {
      if (a.y) {
        held_v[j] = __fadd_rn(held_v[j], held_y[j]);
        r[i] = held_v[j];
      }
      ss += double(held_v[j]) * double(held_v[j]);
    }
  }
  for (int i = tid + kHeld * threads; i < n; i += threads) {
    const float v = add_y(i);
    ss += double(v) * double(v);
  }
  const float scale = rms_scale(ss, n, a.eps);  // also the barrier after every read of row[] above

  float* o = a.out + base;
  uint16_t* image = a.image ? a.image + base : nullptr;
  const bool rotate = image && a.image_signs;
  const auto emit = [&](int i, float v, float w) {
    const float y = __fmul_rn(__fmul_rn(v, scale), w);
    o[i] = y;
    if (rotate) row[i] = y * float(a.image_signs[i]);
    else if (image) image[i] = float_to_bf16_bits(y);
  };
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const int i = tid + j * threads;
    if (i < n) emit(i, held_v[j], held_w[j]);
  }
  for (int i = tid + kHeld * threads; i < n; i += threads) emit(i, r[i], a.w[i]);
  if (rotate) {
    hadamard_butterflies(row, n, a.image_T);
    for (int i = tid; i < n; i += threads) image[i] = float_to_bf16_bits(row[i] * norm.image);
  }
}

void check_rotation(const char* what, int n, int T) {
  if (T < 2 || T > 1024 || (T & (T - 1)) != 0 || n % T != 0)
    throw Error(std::string("cuda backend: add_rmsnorm: the ") + what + " rotation needs T a power of two in 2..1024 " +
                "dividing the group of " + std::to_string(n) + ", got T = " + std::to_string(T));
}

float rotation_scale(int T) { return float(1.0 / std::sqrt(double(T))); }

}  // namespace

void launch_add_rmsnorm(const AddRmsNormArgs& a, cudaStream_t stream) {
  if (a.groups <= 0) return;
  Scales norm;
  if (a.y_signs) {
    if (!a.y_bf16) throw Error("cuda backend: add_rmsnorm: an un-rotated y must be bf16");
    check_rotation("un-rotation of y", a.n, a.y_T);
    norm.y = rotation_scale(a.y_T);
  }
  if (a.image && a.image_signs) {
    check_rotation("image", a.n, a.image_T);
    norm.image = rotation_scale(a.image_T);
  }
  const bool rotates = a.y_signs || (a.image && a.image_signs);
  const size_t smem = rotates ? size_t(a.n) * sizeof(float) : 0;
  if (smem > 48 * 1024) {
    static const cudaError_t raised =
        cudaFuncSetAttribute(add_rmsnorm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024);
    if (raised != cudaSuccess || smem > 227 * 1024)
      throw Error("cuda backend: add_rmsnorm: a rotated group of " + std::to_string(a.n) +
                  " floats does not fit in shared memory");
  }
  launch_programmatic(add_rmsnorm_kernel, unsigned(a.groups), unsigned(norm_threads(a.n)), smem, stream, a, norm);
  check_launch("add_rmsnorm");
}

}  // namespace trellis::model::cuda
