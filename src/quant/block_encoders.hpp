// The block encoder of a coding run (private to trellis_quant): none for the
// CPU (quantize_tensor's own workers), the CUDA Viterbi encoder
// (trellis/cuda/viterbi.hpp) for --device cuda.
//
// require_encoder(cuda) throws trellis::Error when a CUDA run cannot happen:
// this build has no CUDA encoder, or there is no CUDA device.
// BlockEncoders::get(k, L, T, max_overlaps) returns the run's encoder for
// that trellis (built once per k, kept for the run), or null on the CPU.
#pragma once
#include <map>
#include <memory>
#include <tuple>

#include "trellis/codec/block_encoder.hpp"

namespace trellis::quant::detail {

void require_encoder(bool cuda);

class BlockEncoders {
 public:
  explicit BlockEncoders(bool cuda) : cuda_(cuda) {}
  BlockBatchEncoder* get(int k, int L, int T, int max_overlaps);

 private:
  bool cuda_;
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<BlockBatchEncoder>> made_;
};

}  // namespace trellis::quant::detail
