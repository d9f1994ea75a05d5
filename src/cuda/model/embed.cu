// Embedding lookup: out[m, i] = float(E[ids[m], i]) for a bf16, fp16 or fp32
// table kept in the checkpoint's type (every conversion exact). ids are on
// the device (the backend checked them against the vocabulary). One thread
// per output element, grid-stride.
#include <cuda_fp16.h>

#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

template <TableType kType>
__device__ float table_value(const void* table, int64_t i) {
  if constexpr (kType == TableType::bf16) return bf16_bits_to_float(static_cast<const uint16_t*>(table)[i]);
  if constexpr (kType == TableType::f16) return __half2float(static_cast<const __half*>(table)[i]);
  return static_cast<const float*>(table)[i];
}

template <TableType kType>
__global__ void embed_kernel(const void* table, int64_t hidden, const int32_t* ids, int64_t n, float* out) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = e / hidden, i = e % hidden;
    out[e] = table_value<kType>(table, int64_t(ids[m]) * hidden + i);
  }
}

}  // namespace

void launch_embed(const void* table, TableType type, int64_t hidden, const int32_t* ids, int64_t M, float* out,
                  cudaStream_t stream) {
  const int64_t n = M * hidden;
  const unsigned blocks = elementwise_blocks(n);
  switch (type) {
    case TableType::bf16:
      launch_programmatic(embed_kernel<TableType::bf16>, blocks, 256, 0, stream, table, hidden, ids, n, out);
      break;
    case TableType::f16:
      launch_programmatic(embed_kernel<TableType::f16>, blocks, 256, 0, stream, table, hidden, ids, n, out);
      break;
    case TableType::f32:
      launch_programmatic(embed_kernel<TableType::f32>, blocks, 256, 0, stream, table, hidden, ids, n, out);
      break;
  }
  check_launch("embed");
}

}  // namespace trellis::model::cuda
