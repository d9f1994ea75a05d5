// DeviceBuffer: owned device memory (cudaMalloc/cudaFree, move-only).
// Scratch: named grow-only device buffers; `epoch()` changes whenever one is
// reallocated, so a captured CUDA graph that baked in the old addresses can
// be recognised as stale. reserve() grows a slot ahead of its first use.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "launch_check.hpp"

namespace trellis::model::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    detail::check_cuda(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc");
  }
  DeviceBuffer(const void* host, std::size_t bytes) : DeviceBuffer(bytes) {
    detail::check_cuda(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (weights to the device)");
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// qkv_bf16: the q, k, v kernel outputs of one qkv_rope, side by side;
// mlp_bf16: the gate/up output that the down projection reads (mlp);
// norm_bf16: a residual norm's output as its next reader's bf16 input.
enum class Slot {
  x_bf16,
  y_bf16,
  y_f32,
  gate_f32,
  up_f32,
  ids,
  attention,
  qkv_bf16,
  mlp_bf16,
  norm_bf16,
  residual_image,  // a fused residual norm's bf16(x ⊙ w) for its reader
  norm_partials,   // a fused residual norm's fp64 Σx² partials
  count
};

class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  // At least `count` elements of T in `slot` (contents not kept on growth).
  template <typename T>
  T* get(Slot slot, std::size_t count) {
    DeviceBuffer& b = buffers_[std::size_t(slot)];
    const std::size_t need = count * sizeof(T);
    if (b.bytes() < need) {
      detail::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (scratch growth)");
      b = DeviceBuffer();
      b = DeviceBuffer(need + need / 4);
      ++epoch_;
    }
    return b.get<T>();
  }
  // At least `bytes` in `slot` from now on.
  void reserve(Slot slot, std::size_t bytes) {
    if (bytes) get<char>(slot, bytes);
  }
  uint64_t epoch() const { return epoch_; }

 private:
  cudaStream_t stream_;
  std::array<DeviceBuffer, std::size_t(Slot::count)> buffers_;
  uint64_t epoch_ = 0;
};

}  // namespace trellis::model::cuda
