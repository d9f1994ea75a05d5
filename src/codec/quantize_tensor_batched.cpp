// quantize_tensor's batched row coder: stored rows in chunks of about
// kChunkWeights; every row of a chunk runs its scale search
// (quantize_tensor_row.hpp) in step with the others, so each search pass is
// one BlockBatchEncoder call over the blocks of every row still searching.
// Threads gather the rows, build the targets and score the scales.
#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "quantize_tensor_row.hpp"
#include "quantize_tensor_rows.hpp"
#include "trellis/error.hpp"

namespace trellis::detail {

namespace {

constexpr int64_t kChunkWeights = int64_t(1) << 25;

// fn(i) for i in [0, n) over `threads` threads (contiguous ranges); the first
// exception thrown is rethrown once all have stopped.
template <class Fn>
void parallel_for(int64_t n, int threads, const Fn& fn) {
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::exception_ptr error;
  std::mutex lock;
  auto run = [&](int64_t t) {
    try {
      for (int64_t i = n * t / nt; i < n * (t + 1) / nt; ++i) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> g(lock);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < nt; ++t) pool.emplace_back(run, t);
  run(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void code_rows_batched(const RowJob& job, BlockBatchEncoder& encoder) {
  const TrellisGeometry& g = job.q.geom;
  const QuantizeOptions& options = job.options;
  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t cols = g.cols, wpr = g.words_per_row(), blocks_per_row = g.blocks_per_row();
  const int64_t chunk = std::clamp<int64_t>(kChunkWeights / cols, 1, g.rows);
  std::vector<float> rows(size_t(chunk * cols)), v(size_t(chunk * cols));
  std::vector<uint32_t> states(size_t(chunk * cols)), words(size_t(chunk * wpr));
  std::vector<std::unique_ptr<RowScaleSearch>> search(static_cast<size_t>(chunk));
  std::vector<int64_t> active;

  for (int64_t r0 = 0; r0 < g.rows; r0 += chunk) {
    const int64_t n = std::min(chunk, g.rows - r0);
    parallel_for((n + 63) / 64, threads, [&](int64_t tile) {
      const int64_t i0 = tile * 64, m = std::min<int64_t>(64, n - i0);
      job.gather_rows(r0 + i0, m, rows.data() + i0 * cols, job.row_norm.data() + r0 + i0);
    });
    parallel_for(n, threads, [&](int64_t i) {
      try {
        search[size_t(i)] = std::make_unique<RowScaleSearch>(rows.data() + i * cols, cols, g.k, g.T,
                                                             options.scale_passes,
                                                             job.q.codes.data() + g.block_offset(r0 + i, 0));
      } catch (const Error& e) {
        throw Error("quantize_tensor: stored row " + std::to_string(r0 + i) + ": " + e.what());
      }
    });
    for (;;) {
      active.clear();
      for (int64_t i = 0; i < n; ++i)
        if (search[size_t(i)]->factor() > 0.0f) active.push_back(i);
      if (active.empty()) break;
      const int64_t m = int64_t(active.size());
      parallel_for(m, threads, [&](int64_t a) { search[size_t(active[size_t(a)])]->targets(v.data() + a * cols); });
      encoder.encode(v.data(), m * blocks_per_row, words.data(), states.data());
      parallel_for(m, threads, [&](int64_t a) {
        search[size_t(active[size_t(a)])]->encoded(states.data() + a * cols, words.data() + a * wpr);
      });
    }
    for (int64_t i = 0; i < n; ++i) {
      const RowResult res = search[size_t(i)]->result();
      job.q.scales[size_t(r0 + i)] = res.scale;
      job.row_error[size_t(r0 + i)] = res.error;
    }
    if (options.progress) options.progress(r0 + n, g.rows);
  }
}

}  // namespace trellis::detail
