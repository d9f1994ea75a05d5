// Warp-level tensor-core primitives (sm_80+).
//
// m16n8k16 fp16 MMA with fp32 accumulators. Fragment ownership (lane =
// 4·g + q): A a0 = A[g][2q..2q+1], a1 = A[g+8][2q..], a2 = A[g][2q+8..],
// a3 = A[g+8][2q+8..]; B b0 = B[2q..2q+1][g], b1 = B[2q+8..][g];
// D d0,d1 = D[g][2q, 2q+1], d2,d3 = D[g+8][2q, 2q+1].
//
// m16n8k32 MMA of unsigned bytes (A) by signed bytes (B), int32
// accumulators (exact). Each register holds 4 consecutive K elements:
// A a0 = A[g][4q..4q+3], a1 = A[g+8][4q..], a2 = A[g][16+4q..],
// a3 = A[g+8][16+4q..]; B b0 = B[4q..4q+3][g], b1 = B[16+4q..][g];
// D as for m16n8k16.
#pragma once
#include <cstdint>

namespace trellis::cuda::detail {

__device__ __forceinline__ void mma_f16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_u8s8_16832(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace trellis::cuda::detail
