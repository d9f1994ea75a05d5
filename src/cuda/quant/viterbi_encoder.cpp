// cuda::ViterbiEncoder: argument rules, the scratch slots, and the host API's
// chunked staging (contract in include/trellis/cuda/viterbi.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "../trellis/cuda_check.hpp"
#include "trellis/cuda/viterbi.hpp"
#include "trellis/error.hpp"
#include "viterbi_kernel.hpp"

namespace trellis::cuda {

namespace {

using detail::check_cuda;

// Blocks staged per host-API chunk: at least every slot busy, about 2^24
// weights otherwise (64 MiB of targets and as much of states).
int64_t chunk_for(int T, int slots) { return std::max<int64_t>(slots, (int64_t(1) << 24) / T); }

template <class P>
void release(P*& p) {
  if (p) cudaFree(p);
  p = nullptr;
}

}  // namespace

void require_device() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw Error("cuda viterbi: no CUDA device");
  }
}

ViterbiEncoder::ViterbiEncoder(int k, int L, int T, int max_overlaps, std::size_t scratch_bytes)
    : k_(k), L_(L), T_(T), max_overlaps_(max_overlaps) {
  if (k < 2 || k > 4) throw Error("cuda viterbi: k = " + std::to_string(k) + " is outside [2, 4]");
  if (L <= k || L > 16) throw Error("cuda viterbi: L = " + std::to_string(L) + " must satisfy k < L <= 16");
  if (T <= 0 || T % 32 != 0)
    throw Error("cuda viterbi: T = " + std::to_string(T) + " is not a positive multiple of 32");
  if (max_overlaps < 1) throw Error("cuda viterbi: max_overlaps = " + std::to_string(max_overlaps) + " must be >= 1");
  require_device();
  const detail::EncodeShape shape = detail::encode_shape(k, L, T);
  shared_costs_ = shape.shared_costs;
  threads_ = shape.threads;
  smem_bytes_ = shape.smem;
  int dev = 0, sms = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  const std::size_t H = std::size_t(1) << (L - k);
  const std::size_t per_slot =
      std::size_t(T) * H + 4 * H + (shared_costs_ ? 0 : 2 * 4 * (std::size_t(1) << L));
  if (per_slot > scratch_bytes)
    throw Error("cuda viterbi: one block in flight needs " + std::to_string(per_slot) +
                " bytes of scratch (T·2^(L−k) back-pointers and more) but scratch_bytes = " +
                std::to_string(scratch_bytes));
  slots_ = int(std::min<std::size_t>(std::size_t(shape.blocks_per_sm) * std::size_t(sms), scratch_bytes / per_slot));
  check_cuda(cudaMalloc(&back_, std::size_t(slots_) * std::size_t(T) * H), "cudaMalloc(back-pointers)");
  check_cuda(cudaMalloc(&bounds_, std::size_t(slots_) * H * sizeof(float)), "cudaMalloc(bounds)");
  if (!shared_costs_)
    check_cuda(cudaMalloc(&costs_, std::size_t(slots_) * 2 * (std::size_t(1) << L) * sizeof(float)),
               "cudaMalloc(path costs)");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

ViterbiEncoder::~ViterbiEncoder() {
  release(back_);
  release(bounds_);
  release(costs_);
  release(d_v_);
  release(d_words_);
  release(d_states_);
  release(d_results_);
  if (stream_) cudaStreamDestroy(stream_);
}

void ViterbiEncoder::encode_device(const float* v, int64_t blocks, uint32_t* words, uint32_t* states,
                                   BlockResult* results, cudaStream_t stream) {
  if (blocks < 0) throw Error("cuda viterbi: blocks = " + std::to_string(blocks) + " is negative");
  if (blocks > 0 && (!v || !words || !states)) throw Error("cuda viterbi: v, words and states must not be null");
  detail::EncodeArgs args{v, words, states, results, back_, bounds_, costs_, blocks, k_, L_, T_, max_overlaps_};
  const detail::EncodeShape shape{shared_costs_, threads_, smem_bytes_, 0};
  detail::launch_encode(args, shape, int(std::min<int64_t>(blocks, slots_)), stream);
}

void ViterbiEncoder::reserve_chunk(int64_t blocks) {
  if (blocks <= chunk_blocks_) return;
  release(d_v_);
  release(d_words_);
  release(d_states_);
  release(d_results_);
  const std::size_t n = std::size_t(blocks);
  check_cuda(cudaMalloc(&d_v_, n * std::size_t(T_) * sizeof(float)), "cudaMalloc(targets)");
  check_cuda(cudaMalloc(&d_words_, n * std::size_t(T_ * k_ / 32) * sizeof(uint32_t)), "cudaMalloc(words)");
  check_cuda(cudaMalloc(&d_states_, n * std::size_t(T_) * sizeof(uint32_t)), "cudaMalloc(states)");
  check_cuda(cudaMalloc(&d_results_, n * sizeof(BlockResult)), "cudaMalloc(block results)");
  chunk_blocks_ = blocks;
}

void ViterbiEncoder::encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states) {
  encode(v, blocks, words, states, nullptr);
}

void ViterbiEncoder::encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states,
                            BlockEncoding* results) {
  if (blocks < 0) throw Error("cuda viterbi: blocks = " + std::to_string(blocks) + " is negative");
  if (blocks > 0 && (!v || !words || !states)) throw Error("cuda viterbi: v, words and states must not be null");
  const int64_t chunk = chunk_for(T_, slots_);
  reserve_chunk(std::min(blocks, chunk));
  const int wpb = T_ * k_ / 32;
  std::vector<BlockResult> host_results;
  for (int64_t b0 = 0; b0 < blocks; b0 += chunk) {
    const int64_t n = std::min(chunk, blocks - b0);
    check_cuda(cudaMemcpyAsync(d_v_, v + b0 * T_, std::size_t(n * T_) * sizeof(float), cudaMemcpyHostToDevice,
                               stream_),
               "cudaMemcpy(targets)");
    encode_device(d_v_, n, d_words_, d_states_, results ? d_results_ : nullptr, stream_);
    check_cuda(cudaMemcpyAsync(words + b0 * wpb, d_words_, std::size_t(n * wpb) * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpy(words)");
    check_cuda(cudaMemcpyAsync(states + b0 * T_, d_states_, std::size_t(n * T_) * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpy(states)");
    if (results) {
      host_results.resize(std::size_t(n));
      check_cuda(cudaMemcpyAsync(host_results.data(), d_results_, std::size_t(n) * sizeof(BlockResult),
                                 cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpy(block results)");
    }
    check_cuda(cudaStreamSynchronize(stream_), "viterbi_encode_kernel");
    if (results)
      for (int64_t i = 0; i < n; ++i) {
        const BlockResult& r = host_results[std::size_t(i)];
        results[b0 + i] = BlockEncoding{r.error, double(r.lower_bound), r.certified != 0};
      }
  }
}

}  // namespace trellis::cuda
