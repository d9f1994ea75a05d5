// StepGraphs: one-token decode steps as CUDA graphs.
//
// A step starts at the embedding of one token (begin) and ends when its
// result is read (finish, from to_host). In between the backend hands over
// each op as (signature, launch): the signature holds everything the launch
// depends on (op, pointers, shapes, layer) except the token, the position
// and the draw of a sampling choice, which the launches read from device
// memory (StepParams). A step begun with Backend::kNextToken reads the token
// the previous forward's argmax or choice left there (device_token(),
// pipelined decoding) and uploads only its position and draw. The host side
// of the parameters is a ring of kParamSlots pinned StepParams, so a step
// may be prepared while kParamSlots − 1 earlier ones wait to run. finish()
// uploads them and then
//   - replays the graph captured for this exact op sequence, or
//   - captures one, if the sequence ran once already (its scratch sized), or
//   - runs the launches eagerly and remembers the sequence.
// Graphs bake in addresses: `epoch` (from the backend) changes when scratch
// memory moves, and then every graph is dropped. A failed capture turns
// graphs off for good (disabled() says why); the step then runs eagerly.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "trellis/model/cuda_backend.hpp"

namespace trellis::model::cuda {

// One step's parameters in device memory; the token last, so that a step
// whose token is already there uploads the fields before it.
struct StepParams {
  double draw;  // the choice's draw (set_draw), 0 in a step without one
  int32_t position;
  int32_t token;
};

class StepGraphs {
 public:
  using Launch = std::function<void()>;
  StepGraphs(cudaStream_t stream, bool enabled);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  bool enabled() const { return enabled_; }
  bool recording() const { return recording_; }
  Pos device_pos() const { return {&params_dev_->position, 0}; }
  // Where the step reads its token; an argmax or a choice may leave the next step's token here.
  int32_t* device_token() const { return &params_dev_->token; }
  // Where a choice reads its draw (set_draw while recording; a choice outside a step uploads it there).
  double* device_draw() const { return &params_dev_->draw; }
  void set_draw(double u) { params_->draw = u; }

  // token: the step's input, or Backend::kNextToken (already on the device).
  void begin(int32_t token);
  static constexpr int kParamSlots = 4;
  // False when the op cannot join the step (another position); the caller
  // then flushes and runs it eagerly.
  bool add(std::vector<uint64_t> signature, Launch launch, int64_t pos0 = -1);
  // Runs the recorded step (no-op when none is recording).
  void finish(uint64_t epoch);
  // The host waited this long for a step's result (stats).
  void waited(double seconds) { stats_.wait_seconds += seconds; }
  // Runs the recorded launches eagerly, without a graph, and waits.
  void flush();
  const CudaGraphStats& stats() const { return stats_; }

 private:
  void run_eagerly();
  void upload_params();
  bool capture(const std::vector<uint64_t>& key);

  cudaStream_t stream_;
  bool enabled_;
  bool recording_ = false;
  StepParams* params_host_ = nullptr;  // pinned [kParamSlots]
  StepParams* params_ = nullptr;       // the current step's in params_host_
  int param_slot_ = 0;
  bool token_on_device_ = false;    // the current step's token: already at device_token()
  StepParams* params_dev_ = nullptr;
  bool have_pos_ = false;
  std::vector<uint64_t> key_;
  std::vector<Launch> launches_;
  std::map<std::vector<uint64_t>, cudaGraphExec_t> graphs_;
  std::set<std::vector<uint64_t>> warm_;
  uint64_t epoch_ = 0;
  std::chrono::steady_clock::time_point begun_;  // of the current step
  CudaGraphStats stats_;
};

}  // namespace trellis::model::cuda
