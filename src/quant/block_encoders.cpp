// The run's block encoder (contract in block_encoders.hpp).
#include "block_encoders.hpp"

#include "trellis/error.hpp"
#ifdef TRELLIS_HAVE_CUDA_ENCODER
#include "trellis/cuda/viterbi.hpp"
#endif

namespace trellis::quant::detail {

void require_encoder(bool cuda) {
  if (!cuda) return;
#ifdef TRELLIS_HAVE_CUDA_ENCODER
  cuda::require_device();
#else
  throw Error("this build has no CUDA encoder (it was built without a CUDA compiler)");
#endif
}

BlockBatchEncoder* BlockEncoders::get(int k, int L, int T, int max_overlaps) {
  if (!cuda_) return nullptr;
  auto& slot = made_[{k, L, T, max_overlaps}];
#ifdef TRELLIS_HAVE_CUDA_ENCODER
  if (!slot) slot = std::make_unique<cuda::ViterbiEncoder>(k, L, T, max_overlaps);
#else
  require_encoder(true);
#endif
  return slot.get();
}

}  // namespace trellis::quant::detail
