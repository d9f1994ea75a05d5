// Row-wise fp32 ops of the CPU backend (math as in trellis/model/backend.hpp):
//   rmsnorm  each group g of w.size() elements: g / sqrt(mean(g²) + eps) ⊙ w
//            (sum of squares in fp64, then one fp32 scale per group);
//   rope     rotate-half RoPE in place, heads of d = 2·f.size() elements, row m
//            at position p = pos0 + m, angles fp32(p·f_i) as Hugging Face
//            computes them, cos/sin evaluated in fp64 and rounded to fp32;
//   add      x += y.
#pragma once
#include <cstdint>
#include <span>

namespace trellis::model::cpu {

void rmsnorm(const float* x, int64_t rows, int64_t cols, std::span<const float> w, float eps, float* out);
void rope(float* x, int64_t rows, int64_t cols, std::span<const float> f, int64_t pos0);
void add(float* x, const float* y, int64_t n);

}  // namespace trellis::model::cpu
