// Context: per-stream scratch for the trellis kernels. Buffers grow on
// demand (never shrink); reserve() sizes them up front so that launches made
// while a CUDA graph is being captured allocate nothing.
#include <cublas_v2.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "trellis/cuda/trellis_ops.hpp"

namespace trellis::cuda {

using detail::check_cuda;

namespace {

template <typename T>
T* grow(T*& buf, std::size_t& have, std::size_t need, cudaStream_t stream, bool zero) {
  if (need <= have && buf) return buf;
  if (buf) {
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (scratch grow)");
    check_cuda(cudaFree(buf), "cudaFree (scratch)");
    buf = nullptr;
  }
  const std::size_t n = std::max<std::size_t>(need, 1);
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&buf), n * sizeof(T)), "cudaMalloc (scratch)");
  // Zeroed on the context's stream, which may be non-blocking (not ordered after
  // the legacy stream a plain cudaMemset uses), and waited for, so the zeros are
  // in place before any later launch, programmatic ones included (the form tests
  // ran this way). Growth is rare and happens in eager work: the model captures
  // a step graph only after its sequence ran once (step_graphs.hpp).
  if (zero) {
    check_cuda(cudaMemsetAsync(buf, 0, n * sizeof(T), stream), "cudaMemsetAsync (scratch)");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (scratch zero)");
  }
  have = n;
  return buf;
}

}  // namespace

Context::Context(cudaStream_t stream) : stream_(stream) {
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute");
}

Context::~Context() {
  cudaFree(partials_);
  cudaFree(counters_);
  cudaFree(staged_);
  cudaFree(expanded_);
  if (cublas_) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
}

void Context::reserve(std::size_t partial_floats, std::size_t counters, std::size_t staged_halves,
                      std::size_t expand_elems) {
  partials(partial_floats);
  this->counters(counters);
  staged(staged_halves);
  if (expand_elems) expanded(expand_elems);
  cublas();
}

float* Context::partials(std::size_t n) { return grow(partials_, partials_n_, n, stream_, false); }
unsigned* Context::counters(std::size_t n) { return grow(counters_, counters_n_, n, stream_, true); }
uint16_t* Context::staged(std::size_t n) { return grow(staged_, staged_n_, n, stream_, false); }
uint16_t* Context::expanded(std::size_t n) { return grow(expanded_, expanded_n_, n, stream_, false); }

void* Context::cublas() {
  if (!cublas_) {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error("cuBLAS: cublasCreate failed");
    cublasSetStream(h, stream_);
    cublas_ = h;
  }
  return cublas_;
}

}  // namespace trellis::cuda
