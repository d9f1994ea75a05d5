// quantize_tensor's CPU row coder: a pool of workers takes stored rows one at
// a time and runs each row's scale search (quantize_tensor_row.hpp) over its
// own CPU Viterbi encoder (codec/viterbi.hpp).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "quantize_tensor_row.hpp"
#include "quantize_tensor_rows.hpp"
#include "trellis/codec/viterbi.hpp"
#include "trellis/error.hpp"

namespace trellis::detail {

namespace {

// One stored row: the scale search, each pass encoding the row block by block.
RowResult code_row(ViterbiEncoder& enc, const float* w, int64_t cols, int scale_passes, uint32_t* out,
                   std::vector<float>& v, std::vector<uint32_t>& states, std::vector<uint32_t>& words) {
  const int T = enc.T();
  const int wpb = T * enc.k() / 32;
  v.resize(size_t(cols));
  states.resize(size_t(cols));
  words.resize(size_t(cols / T * wpb));
  RowScaleSearch search(w, cols, enc.k(), T, scale_passes, out);
  while (search.factor() > 0.0f) {
    search.targets(v.data());
    for (int64_t b = 0; b < cols / T; ++b)
      enc.encode_block(v.data() + b * T, words.data() + b * wpb, states.data() + b * T);
    search.encoded(states.data(), words.data());
  }
  return search.result();
}

}  // namespace

void code_rows_cpu(const RowJob& job) {
  const TrellisGeometry& g = job.q.geom;
  const QuantizeOptions& options = job.options;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex report;
  int64_t done = 0;
  std::exception_ptr error;

  auto worker = [&] {
    try {
      ViterbiEncoder enc(g.k, g.L, g.T, options.max_overlaps);
      std::vector<float> row(size_t(g.cols)), v;
      std::vector<uint32_t> states, words;
      for (int64_t r = next++; r < g.rows && !failed; r = next++) {
        const double norm = job.gather(r, row.data());
        RowResult res;
        try {
          res = code_row(enc, row.data(), g.cols, options.scale_passes, job.q.codes.data() + g.block_offset(r, 0), v,
                         states, words);
        } catch (const Error& e) {
          throw Error("quantize_tensor: stored row " + std::to_string(r) + ": " + e.what());
        }
        job.q.scales[size_t(r)] = res.scale;
        job.row_error[size_t(r)] = res.error;
        job.row_norm[size_t(r)] = norm;
        std::lock_guard<std::mutex> lock(report);
        ++done;
        if (options.progress) options.progress(done, g.rows);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(report);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t nthreads = std::min<int64_t>(options.threads > 0 ? options.threads : hw, g.rows);
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < nthreads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace trellis::detail
