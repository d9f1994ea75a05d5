// The two ways quantize_tensor codes its stored rows (private to it): CPU
// workers, one row at a time over the CPU Viterbi encoder, or chunks of rows
// in step over a BlockBatchEncoder. Both write q.codes, q.scales and the
// per-row squared error and norm, and call options.progress.
#pragma once
#include <cstdint>
#include <vector>

#include "trellis/codec/quantize_tensor.hpp"

namespace trellis::detail {

struct RowJob {
  const float* W;  // [out_features, in_features] row-major
  int64_t in_features;
  const QuantizeOptions& options;
  QuantizedTensor& q;               // geom set, codes/scales/signs sized
  std::vector<double>& row_error;   // Σ (w − ŵ)² per stored row
  std::vector<double>& row_norm;    // Σ w² per stored row

  // Stored row r as cols floats (rotated when options.rotate); returns its
  // squared norm. Throws trellis::Error naming a non-finite weight.
  double gather(int64_t r, float* row) const;
  // Stored rows r0 … r0+n−1 into rows[i·cols …] (axis 0 in cache-sized tiles);
  // norms[i] = Σ w². Same checks as gather.
  void gather_rows(int64_t r0, int64_t n, float* rows, double* norms) const;
};

void code_rows_cpu(const RowJob& job);
void code_rows_batched(const RowJob& job, BlockBatchEncoder& encoder);

}  // namespace trellis::detail
