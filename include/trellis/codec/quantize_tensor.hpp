// Quantizing a float matrix into a trellis tensor (CPU).
//
// quantize_tensor(W [out, in] row-major, options) codes the stored matrix
// (axis 1: W, rows = out, coded along in; axis 0: Wᵀ, rows = in, coded along
// out; SPEC §1) block by block with the tail-biting Viterbi encoder
// (codec/viterbi.hpp) and one fp16 scale per stored row chosen to minimize
// the row's squared error (encode, least-squares refit, re-encode; see
// src/codec/quantize_tensor_row.hpp). Layout: row-major blocks
// (block_interleave = 0).
//
// With rotate, every stored row is first replaced by H (s ⊙ row) (SPEC §5,
// codec/rotation.hpp), so the codes decode to the rotated matrix W' and
// `signs` (length = coded-axis size) is returned for `<name>.signs`.
//
// rel_error = ‖W − Ŵ‖_F / ‖W‖_F with Ŵ the canonical fp32 decode, un-rotated;
// it is computed in the stored (rotated) space, equal to the un-rotated one up
// to float rounding because H·diag(s) is orthogonal. For unit-variance data
// rel_error² is the per-weight MSE.
//
// Rows are spread over `threads` workers (0: all hardware threads); codes and
// scales do not depend on the thread count. `progress(rows_done, rows_total)`
// is called after every stored row, one call at a time, from the workers.
//
// With `encoder` set (a BlockBatchEncoder for the same k, L and T, e.g. the
// CUDA one), the blocks are coded by it instead of the CPU Viterbi encoder:
// stored rows go in chunks of about 2^25 weights, all rows of a chunk run the
// same scale search in step (one encoder call per search pass over every row
// still searching), the threads gather rows and score scales, and progress
// is called once per chunk. An encoder that chooses the same states as the
// CPU one gives the same codes and scales.
// Throws trellis::Error on invalid parameters (k ∉ [1, 8], L ∉ (k, 16],
// T not a positive multiple of 32 — or not a power of two with rotate —,
// the coded axis not a multiple of T, stored rows not a multiple of 8),
// non-finite weights, a row whose scale overflows fp16, or an encoder for
// another k, L or T.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "trellis/codec/block_encoder.hpp"
#include "trellis/geometry.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis {

struct QuantizeOptions {
  int k = 2;      // bits per weight
  int L = 12;     // state bits
  int T = 256;    // block length
  int axis = 1;   // 1: code along in (store W); 0: code along out (store Wᵀ)
  bool rotate = false;
  const int8_t* signs = nullptr;  // rotation signs to use (shared by layers with one input); else drawn from seed
  uint64_t seed = 0;
  int scale_passes = 2;  // Viterbi encodes per row in the scale search (≥ 1)
  int max_overlaps = 2;  // constrained passes per block in the tail-biting search (≥ 1)
  int threads = 0;
  BlockBatchEncoder* encoder = nullptr;  // borrowed; null: the CPU encoder (with max_overlaps)
  std::function<void(int64_t rows_done, int64_t rows_total)> progress;
};

struct QuantizedTensor {
  TrellisGeometry geom;
  std::vector<uint32_t> codes;   // geom.total_words()
  std::vector<uint16_t> scales;  // fp16 bits, geom.rows
  std::vector<int8_t> signs;     // coded-axis length when rotated, else empty
  double rel_error = 0.0;

  TrellisTensorView view() const { return TrellisTensorView{codes.data(), scales.data(), geom}; }
};

QuantizedTensor quantize_tensor(const float* W, int64_t out_features, int64_t in_features,
                                const QuantizeOptions& options);

}  // namespace trellis
