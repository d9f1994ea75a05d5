// The sampler's choice on the device (Backend::choose_to_next): from the
// keys of a row's `count` largest logits (top_logits.cu), the draw u (device
// memory: the decode step's parameters) and the sampling parameters,
// choose_from_top (trellis/model/top_choice.hpp, the host's own code, with
// its exp) gives the token. It goes to next_token (0 where the choice
// declines, so that the next step's embedding reads a valid id) and to
// chosen (the token, or kChoiceDeclined: a row with a NaN, equal values past
// the margin), which the host copies back.
//
// Launch: one thread (count ≤ kTopLogitsMaxCount entries, which come sorted
// by logit, so the sort by scaled logit is one pass); programmatic, waiting
// before it reads the keys. Allocates nothing: capturable in the decode
// step's CUDA graph.
#include <cstdint>
#include <string>

#include "device_math.cuh"
#include "launch_check.hpp"
#include "top_logit_key.hpp"
#include "trellis/error.hpp"
#include "trellis/model/top_choice.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void __launch_bounds__(1) top_choice_kernel(const uint64_t* keys, int count, TopChoiceParams params,
                                                       const double* draw, int32_t* next_token, int32_t* chosen) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  TopLogit top[kTopLogitsMaxCount];
  Candidate work[kTopLogitsMaxCount];
  int32_t token = kChoiceDeclined;
  if (keys[0] != kNanRowKey) {
    for (int i = 0; i < count; ++i) top[i] = top_logit_of(keys[i]);
    token = choose_from_top(top, count, params, *draw, work);
  }
  *chosen = token;
  *next_token = token == kChoiceDeclined ? 0 : token;
}

}  // namespace

void launch_top_choice(const uint64_t* keys, int count, const TopChoiceParams& params, const double* draw,
                       int32_t* next_token, int32_t* chosen, cudaStream_t stream) {
  if (count < 1 || count > kTopLogitsMaxCount)
    throw Error("cuda backend: top_choice: " + std::to_string(count) + " entries (1 to " +
                std::to_string(kTopLogitsMaxCount) + ")");
  launch_programmatic(top_choice_kernel, 1u, 1, 0, stream, keys, count, params, draw, next_token, chosen);
  check_launch("top_choice");
}

}  // namespace trellis::model::cuda
