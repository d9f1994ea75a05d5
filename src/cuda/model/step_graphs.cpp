// StepGraphs (contract in step_graphs.hpp).
#include "step_graphs.hpp"

#include <cstddef>
#include <exception>

#include "launch_check.hpp"

namespace trellis::model::cuda {

using detail::check_cuda;

namespace {
constexpr std::size_t kMaxGraphs = 16;  // one per (session, buffers) shape; a few in practice
}

StepGraphs::StepGraphs(cudaStream_t stream, bool enabled) : stream_(stream), enabled_(enabled) {
  check_cuda(cudaMallocHost(&params_host_, kParamSlots * sizeof(StepParams)), "cudaMallocHost (step parameters)");
  params_ = params_host_;
  check_cuda(cudaMalloc(&params_dev_, sizeof(StepParams)), "cudaMalloc (step parameters)");
  if (!enabled_) stats_.disabled = "turned off";
}

StepGraphs::~StepGraphs() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  cudaFreeHost(params_host_);
  cudaFree(params_dev_);
}

void StepGraphs::begin(int32_t token) {
  begun_ = std::chrono::steady_clock::now();
  recording_ = true;
  have_pos_ = false;
  key_.clear();
  launches_.clear();
  param_slot_ = (param_slot_ + 1) % kParamSlots;
  params_ = params_host_ + param_slot_;
  token_on_device_ = token == Backend::kNextToken;
  *params_ = {0.0, 0, token_on_device_ ? 0 : token};
}

bool StepGraphs::add(std::vector<uint64_t> signature, Launch launch, int64_t pos0) {
  if (pos0 >= 0) {
    if (have_pos_ && params_->position != pos0) return false;
    have_pos_ = true;
    params_->position = int32_t(pos0);
  }
  key_.push_back(signature.size());
  key_.insert(key_.end(), signature.begin(), signature.end());
  launches_.push_back(std::move(launch));
  return true;
}

void StepGraphs::upload_params() {
  const size_t bytes = token_on_device_ ? offsetof(StepParams, token) : sizeof(StepParams);
  check_cuda(cudaMemcpyAsync(params_dev_, params_, bytes, cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync (step parameters)");
}

void StepGraphs::run_eagerly() {
  for (const Launch& l : launches_) l();
  ++stats_.eager_steps;
}

void StepGraphs::flush() {
  if (!recording_) return;
  recording_ = false;
  upload_params();
  run_eagerly();
  launches_.clear();
  // The pinned parameters may be rewritten by the next step: wait for the upload.
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (step flush)");
}

bool StepGraphs::capture(const std::vector<uint64_t>& key) {
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  std::string failure;
  try {
    for (const Launch& l : launches_) l();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  if (failure.empty() && end != cudaSuccess) failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(end);
  cudaGraphExec_t exec = nullptr;
  if (failure.empty()) {
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    if (inst != cudaSuccess) failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(inst);
  }
  if (graph) cudaGraphDestroy(graph);
  if (!failure.empty()) {
    cudaGetLastError();  // clear the capture's sticky-free error state
    enabled_ = false;
    stats_.disabled = "capture failed: " + failure;
    return false;
  }
  if (graphs_.size() >= kMaxGraphs) {
    cudaGraphExecDestroy(graphs_.begin()->second);
    graphs_.erase(graphs_.begin());
  }
  graphs_.emplace(key, exec);
  ++stats_.captures;
  return true;
}

void StepGraphs::finish(uint64_t epoch) {
  if (!recording_) return;
  recording_ = false;
  if (epoch != epoch_) {
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    graphs_.clear();
    warm_.clear();
    epoch_ = epoch;
  }
  upload_params();
  const auto it = graphs_.find(key_);
  if (it != graphs_.end()) {
    check_cuda(cudaGraphLaunch(it->second, stream_), "cudaGraphLaunch");
    ++stats_.replays;
  } else if (enabled_ && warm_.count(key_) && capture(key_)) {
    check_cuda(cudaGraphLaunch(graphs_.at(key_), stream_), "cudaGraphLaunch");
    ++stats_.replays;
  } else {
    run_eagerly();
    if (enabled_) warm_.insert(key_);
  }
  launches_.clear();
  stats_.host_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begun_).count();
}

}  // namespace trellis::model::cuda
