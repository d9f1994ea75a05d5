// CUDA tail-biting Viterbi encoder: the CPU encoder's problem and search
// (codec/viterbi.hpp), for many blocks at once.
//
// Each thread block of the kernel codes one trellis block of T targets at a
// time (a persistent grid walks the batch), in four stages that mirror the
// CPU encoder operation for operation:
//   1. overlap bounds C(o) = min F + min G: a forward pass over the targets
//      rotated by T/2 up to the wrap, and a pass over the reversed first half
//      on bit-reversed states;
//   2. constrained passes through the overlaps o in increasing C(o) (lowest o
//      on ties), at most max_overlaps of them, stopping once the next C(o) is
//      no smaller than the best circular cost found (then "certified": the
//      exact circular optimum);
//   3. a backtrack of the best pass through T·2^(L−k) back-pointer bytes per
//      block in device memory;
//   4. the states, the packed words (codec/viterbi.hpp's pack_block_states
//      layout) and the block's error Σ (y(s_t) − v_t)² in double.
// The add-compare-select step is the CPU's (codec viterbi_forward.hpp):
//   m[h] = min_j cost[h + j·H] (lowest j on ties), H = 2^(L−k),
//   cost'[h·2^k + b] = m[h] + (y(h·2^k + b) − v_t)²,
// each rounding done as the CPU does it (no fused multiply-add), so for the
// same targets both encoders choose the same states unless two overlap
// bounds tie exactly (the CPU's order among ties is unspecified).
// Path costs live in shared memory (two arrays of 2^L floats) for L ≤ 12 and
// in device memory, per resident thread block, for L = 13 … 16.
//
// Requires a CUDA device, 2 ≤ k ≤ 4, k < L ≤ 16, T a positive multiple of
// 32, max_overlaps ≥ 1; throws trellis::Error naming the rule otherwise.
// Targets must be finite.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trellis/codec/block_encoder.hpp"
#include "trellis/codec/viterbi.hpp"

namespace trellis::cuda {

// Throws trellis::Error("cuda viterbi: no CUDA device") when there is none.
void require_device();

// Per block, written by the kernel.
struct BlockResult {
  double error;       // Σ_t (y(s_t) − v_t)² of the chosen circular path
  float lower_bound;  // best non-circular cost
  uint32_t certified; // 1: the chosen path is the exact circular optimum
};

class ViterbiEncoder final : public BlockBatchEncoder {
 public:
  // scratch_bytes: the most device memory for back-pointers (and L ≥ 13
  // path costs) of the blocks in flight; it bounds how many are.
  ViterbiEncoder(int k, int L, int T, int max_overlaps = 2, std::size_t scratch_bytes = std::size_t(1) << 30);
  ~ViterbiEncoder() override;
  ViterbiEncoder(const ViterbiEncoder&) = delete;
  ViterbiEncoder& operator=(const ViterbiEncoder&) = delete;

  int k() const override { return k_; }
  int L() const override { return L_; }
  int T() const override { return T_; }
  int max_overlaps() const { return max_overlaps_; }
  // Thread blocks in flight (each owns one scratch slot).
  int slots() const { return slots_; }

  // Host arrays: v [blocks·T] → words [blocks·T·k/32], states [blocks·T];
  // synchronous, in chunks that bound the device memory.
  void encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states) override;
  // The same, and each block's error, lower bound and certification.
  void encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states, BlockEncoding* results);

  // Device arrays, asynchronous on `stream` (results may be null).
  void encode_device(const float* v, int64_t blocks, uint32_t* words, uint32_t* states, BlockResult* results,
                     cudaStream_t stream);

 private:
  void reserve_chunk(int64_t blocks);

  int k_, L_, T_, max_overlaps_;
  bool shared_costs_ = true;
  int threads_ = 0, slots_ = 0;
  std::size_t smem_bytes_ = 0;
  uint8_t* back_ = nullptr;
  float* bounds_ = nullptr;
  float* costs_ = nullptr;
  // Device staging of the host API.
  int64_t chunk_blocks_ = 0;
  float* d_v_ = nullptr;
  uint32_t* d_words_ = nullptr;
  uint32_t* d_states_ = nullptr;
  BlockResult* d_results_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace trellis::cuda
