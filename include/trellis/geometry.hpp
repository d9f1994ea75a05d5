// TrellisGeometry: where every code word of a trellis tensor lives (SPEC §1).
//
// axis 1 stores W [out, in] coded along the input dim: rows = out, cols = in.
// axis 0 stores Wᵀ [in, out] coded along the output dim: rows = in, cols = out.
// Each stored row is cols/T blocks of wpb = T·k/32 words, in order
// (row-major layout, `.weight` shape [rows, cols·k/32]).
// block_interleave == 2 (k = 3, T = 256, axis 0 only): `.weight` is
// [cols/512, rows, 48]; block pair p of stored row r is 48 words, the 24 of
// block 2p then the 24 of block 2p+1.
#pragma once
#include <cstdint>

#include "trellis/hd.hpp"

namespace trellis {

struct TrellisGeometry {
  int k = 0;                 // bits per weight
  int L = 0;                 // state bits
  int T = 0;                 // positions per block
  int axis = 1;              // 1: coded along input features; 0: along output features
  int64_t rows = 0;          // stored rows
  int64_t cols = 0;          // stored columns (the coded axis)
  int64_t in_features = 0;
  int64_t out_features = 0;
  int block_interleave = 0;  // 0: row-major blocks; 2: k3 block-pair interleave

  TRELLIS_HD constexpr int words_per_block() const { return T * k / 32; }
  TRELLIS_HD constexpr int64_t blocks_per_row() const { return cols / T; }
  TRELLIS_HD constexpr int64_t words_per_row() const { return blocks_per_row() * words_per_block(); }
  TRELLIS_HD constexpr int64_t total_words() const { return rows * words_per_row(); }

  // Offset (in words) of the first word of block b of stored row r.
  TRELLIS_HD constexpr int64_t block_offset(int64_t r, int64_t b) const {
    const int wpb = words_per_block();
    if (block_interleave == 2) return ((b >> 1) * rows + r) * (2 * wpb) + (b & 1) * wpb;
    return (r * blocks_per_row() + b) * wpb;
  }
};

// Geometry of a linear layer W [out, in] coded on `axis` (no validation here;
// see format/trellis_tensor.hpp for the checked constructor).
constexpr TrellisGeometry make_geometry(int k, int L, int T, int axis, int64_t out_features,
                                        int64_t in_features, int block_interleave = 0) {
  TrellisGeometry g;
  g.k = k;
  g.L = L;
  g.T = T;
  g.axis = axis;
  g.in_features = in_features;
  g.out_features = out_features;
  g.rows = axis == 1 ? out_features : in_features;
  g.cols = axis == 1 ? in_features : out_features;
  g.block_interleave = block_interleave;
  return g;
}

}  // namespace trellis
