// The sampler's choice on the device (Backend::choose_to_next): from the
// keys of a row's `count` largest logits (top_logits.cu), the draw u (device
// memory: the decode step's parameters) and the sampling parameters,
// choose_from_top (trellis/model/top_choice.hpp, the host's own code, with
// its exp) gives the token. It goes to next_token (0 where the choice
// declines, so that the next step's embedding reads a valid id) and to
// chosen (the token, or kChoiceDeclined: a row with a NaN, equal values past
// the margin), which the host copies back.
//
// Launch: one warp, the choice's team (top_choice.hpp): the lanes decode
// the keys, divide and take the exps of count ≤ kTopLogitsMaxCount entries
// in shared memory, lane 0 runs the sums, the scans and the sort (one pass:
// the entries come sorted by logit); programmatic, waiting before it reads
// the keys. Allocates nothing: capturable in the decode step's CUDA graph.
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

struct WarpTeam {
  __device__ int rank() const { return int(threadIdx.x); }
  __device__ int size() const { return 32; }
  __device__ void sync() const { __syncwarp(); }
  template <class T>
  __device__ T share(T v) const {
    return __shfl_sync(0xffffffffu, v, 0);
  }
};

__global__ void __launch_bounds__(32) top_choice_kernel(const uint64_t* keys, int count, TopChoiceParams params,
                                                        const double* draw, int32_t* next_token,
                                                        int32_t* chosen) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  __shared__ TopLogit top[kTopLogitsMaxCount];
  __shared__ Candidate work[kTopLogitsMaxCount];
  const WarpTeam team;
  int32_t token = kChoiceDeclined;
  if (keys[0] != kNanRowKey) {
    for (int i = team.rank(); i < count; i += team.size()) top[i] = top_logit_of(keys[i]);
    team.sync();
    token = choose_from_top(team, top, count, params, *draw, work);
  }
  if (team.rank() == 0) {
    *chosen = token;
    *next_token = token == kChoiceDeclined ? 0 : token;
  }
}

}  // namespace

void launch_top_choice(const uint64_t* keys, int count, const TopChoiceParams& params, const double* draw,
                       int32_t* next_token, int32_t* chosen, cudaStream_t stream) {
  if (count < 1 || count > kTopLogitsMaxCount)
    throw Error("cuda backend: top_choice: " + std::to_string(count) + " entries (1 to " +
                std::to_string(kTopLogitsMaxCount) + ")");
  launch_programmatic(top_choice_kernel, 1u, 32, 0, stream, keys, count, params, draw, next_token, chosen);
  check_launch("top_choice");
}

}  // namespace trellis::model::cuda
