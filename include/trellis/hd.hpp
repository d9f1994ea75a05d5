// TRELLIS_HD marks functions usable from host code and from CUDA device code.
#pragma once
#if defined(__CUDACC__)
#define TRELLIS_HD __host__ __device__ __forceinline__
#else
#define TRELLIS_HD inline
#endif
