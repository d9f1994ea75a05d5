// The optional Hadamard rotation of trellis tensors (SPEC §5).
//
// H is block-diagonal with blocks H_T = (1/√T)·Walsh–Hadamard of order T
// (T a power of two): symmetric and orthogonal, so H·H = I. s is a ±1 sign
// vector along the coded axis.
//
// In terms of stored rows (the coded axis is the row, for both axes):
//   rotate_rows:   x ← H (s ⊙ x)     applied by the quantizer to every stored
//                                    row: axis 1 stores W' = W·diag(s)·H,
//                                    axis 0 stores W'ᵀ with W' = H·diag(s)·W;
//   unrotate_rows: x ← s ⊙ (H x)     its inverse.
// At inference (activations as rows of length n):
//   axis 1, input side:  y = W' (H (s ⊙ x))  → rotate_rows on x before the matmul;
//   axis 0, output side: y = s ⊙ (H (W' x))  → unrotate_rows on y after it.
// Un-rotating an expanded tensor: unrotate_rows on each stored row (axis 1:
// rows of W'; axis 0: columns of W', i.e. rows of W'ᵀ).
#pragma once
#include <cstdint>
#include <vector>

namespace trellis {

// In place, each of n_blocks contiguous blocks of T floats ← H_T · block.
// Throws trellis::Error unless T is a power of two ≥ 1.
void fwht_normalized(float* x, int64_t n_blocks, int T);

// n signs (±1) from a seed; the same seed gives the same signs everywhere.
std::vector<int8_t> random_signs(int64_t n, uint64_t seed);

// m rows of n floats (n a multiple of T), in place, as above.
void rotate_rows(float* x, int64_t m, int64_t n, const int8_t* signs, int T);
void unrotate_rows(float* x, int64_t m, int64_t n, const int8_t* signs, int T);

}  // namespace trellis
