// Dense matmul on the CPU: y[M, out] = x[M, in] · Wᵀ for W [out, in]
// row-major in bf16 (raw bits, borrowed from the mapped file) or fp32, x and
// y fp32.
//
// Every output is one dot product summed the same way whatever M and the
// thread count (16 fp32 lane partials over i ascending, the tail into the
// lanes, then a fixed pairwise fold of the lanes), so a batched forward and
// one-token-at-a-time decoding give bit-identical projections. Work is split
// across output rows in blocks of 4; each block's weights are widened while
// they stream and reused for all M rows of x (M = 1: a GEMV; M > 1: the
// block stays in cache across the rows).
#pragma once
#include <cstdint>

#include "thread_pool.hpp"

namespace trellis::model::cpu {

void matmul_bf16(ThreadPool& pool, const uint16_t* w, int64_t out, int64_t in, const float* x, int64_t M, float* y);
void matmul_f32(ThreadPool& pool, const float* w, int64_t out, int64_t in, const float* x, int64_t M, float* y);

}  // namespace trellis::model::cpu
