// A batch encoder of tail-biting trellis blocks: the interface through which
// quantize_tensor (codec/quantize_tensor.hpp) hands whole batches of blocks
// to an encoder that is not the CPU one (the CUDA encoder,
// cuda/viterbi.hpp).
//
// encode(v, blocks, words, states) codes `blocks` blocks of T targets each
// (block b's targets are v[b·T … b·T + T − 1], in code units) exactly as
// ViterbiEncoder::encode_block (codec/viterbi.hpp) states the problem: each
// block becomes a valid circular stream of T·k/32 words (words[b·T·k/32 …])
// and states[b·T + t] is the state the encoder chose at position t, which
// decode_block_states (codec/expand.hpp) reproduces from the words.
#pragma once
#include <cstdint>

namespace trellis {

class BlockBatchEncoder {
 public:
  virtual ~BlockBatchEncoder() = default;
  virtual int k() const = 0;
  virtual int L() const = 0;
  virtual int T() const = 0;
  virtual void encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states) = 0;
};

}  // namespace trellis
