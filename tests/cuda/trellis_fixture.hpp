// Test support for the CUDA trellis forms: random trellis tensors on host and
// device, bf16 activations, the fp64 CPU reference Σ_c w_canonical·x, and the
// comparison ‖out − ref‖ / ‖ref‖ (NaN never passes).
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "trellis/geometry.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::test {

#define TRELLIS_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

bool have_gpu();
#define TRELLIS_REQUIRE_CUDA_DEVICE() \
  if (!trellis::test::have_gpu()) GTEST_SKIP() << "no CUDA device: CUDA kernel test not run"

// One random trellis tensor, on host and device.
struct RandomTrellis {
  TrellisGeometry geom;
  std::vector<uint32_t> codes;
  std::vector<uint16_t> scales;  // fp16 bits
  uint32_t* d_codes = nullptr;
  uint16_t* d_scales = nullptr;

  RandomTrellis(const TrellisGeometry& g, std::mt19937_64& rng);
  ~RandomTrellis();
  RandomTrellis(const RandomTrellis&) = delete;
  RandomTrellis& operator=(const RandomTrellis&) = delete;
  TrellisTensorView host() const { return {codes.data(), scales.data(), geom}; }
  TrellisTensorView device() const { return {d_codes, d_scales, geom}; }
};

// Device buffer of bf16 values with a host mirror.
struct DeviceBf16 {
  std::vector<uint16_t> host;
  uint16_t* dev = nullptr;
  explicit DeviceBf16(std::size_t n);
  ~DeviceBf16();
  DeviceBf16(const DeviceBf16&) = delete;
  DeviceBf16& operator=(const DeviceBf16&) = delete;
  void randomize(std::mt19937_64& rng);  // N(0,1) rounded to bf16, then uploaded
  void upload();                         // host to the device
  void poison();                         // 0xFFFF (NaN) on the device
  void download();
};

// ref[m][o] = Σ_i W[o][i]·x[m][i] in fp64, W the canonical fp32 weights. Threads over stored rows.
std::vector<double> reference_linear(const TrellisTensorView& w, const std::vector<uint16_t>& x, int M);

// ‖out − ref‖ / ‖ref‖ over the first n elements; +inf if any output is NaN/inf.
double relative_error(const std::vector<uint16_t>& out, const std::vector<double>& ref, std::size_t n);

// The same codes in the k3 block-pair interleaved layout ([cols/512, rows, 48]).
std::vector<uint32_t> interleave_k3(const TrellisGeometry& row_major, const std::vector<uint32_t>& codes);

std::mt19937_64 fresh_rng(const char* test);

}  // namespace trellis::test
