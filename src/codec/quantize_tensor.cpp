// quantize_tensor: validation, per-row gather (+ rotation), the worker pool
// over stored rows, and the error total (contract in
// include/trellis/codec/quantize_tensor.hpp).
#include "trellis/codec/quantize_tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "quantize_tensor_row.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/error.hpp"

namespace trellis {

namespace {

void validate(int64_t out_features, int64_t in_features, const QuantizeOptions& o) {
  auto fail = [](const std::string& why) { throw Error("quantize_tensor: " + why); };
  if (o.k < 1 || o.k > 8) fail("k = " + std::to_string(o.k) + " is outside [1, 8]");
  if (o.L <= o.k || o.L > 16) fail("L = " + std::to_string(o.L) + " must satisfy k < L <= 16");
  if (o.T <= 0 || o.T % 32 != 0) fail("T = " + std::to_string(o.T) + " is not a positive multiple of 32");
  if (o.axis != 0 && o.axis != 1) fail("axis = " + std::to_string(o.axis) + " is not 0 or 1");
  if (o.rotate && (o.T & (o.T - 1)) != 0)
    fail("rotation needs T a power of two, T = " + std::to_string(o.T));
  if (out_features <= 0 || in_features <= 0) fail("empty matrix");
  const int64_t rows = o.axis == 1 ? out_features : in_features;
  const int64_t cols = o.axis == 1 ? in_features : out_features;
  if (cols % o.T != 0)
    fail("the coded axis (" + std::to_string(cols) + ") is not a multiple of T = " + std::to_string(o.T));
  if (rows % 8 != 0) fail("stored rows (" + std::to_string(rows) + ") are not a multiple of 8");
  if (o.scale_passes < 1 || o.max_overlaps < 1) fail("scale_passes and max_overlaps must be >= 1");
}

}  // namespace

QuantizedTensor quantize_tensor(const float* W, int64_t out_features, int64_t in_features,
                                const QuantizeOptions& options) {
  validate(out_features, in_features, options);
  QuantizedTensor q;
  q.geom = make_geometry(options.k, options.L, options.T, options.axis, out_features, in_features);
  const TrellisGeometry& g = q.geom;
  q.codes.assign(size_t(g.total_words()), 0u);
  q.scales.assign(size_t(g.rows), 0);
  if (options.rotate)
    q.signs = options.signs ? std::vector<int8_t>(options.signs, options.signs + g.cols)
                            : random_signs(g.cols, options.seed);

  std::vector<double> row_error(size_t(g.rows)), row_norm(size_t(g.rows));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex report;
  int64_t done = 0;
  std::exception_ptr error;

  auto worker = [&] {
    try {
      detail::RowQuantizer rq(g.k, g.L, g.T, options.max_overlaps, options.scale_passes);
      std::vector<float> row(size_t(g.cols));
      for (int64_t r = next++; r < g.rows && !failed; r = next++) {
        double norm = 0.0;
        for (int64_t c = 0; c < g.cols; ++c) {
          const float x = g.axis == 1 ? W[r * in_features + c] : W[c * in_features + r];
          if (!std::isfinite(x))
            throw Error("quantize_tensor: weight [" + std::to_string(g.axis == 1 ? r : c) + ", " +
                        std::to_string(g.axis == 1 ? c : r) + "] is not finite");
          row[size_t(c)] = x;
          norm += double(x) * double(x);
        }
        if (options.rotate) rotate_rows(row.data(), 1, g.cols, q.signs.data(), g.T);
        detail::RowResult res;
        try {
          res = rq.quantize(row.data(), g.cols, q.codes.data() + g.block_offset(r, 0));
        } catch (const Error& e) {
          throw Error("quantize_tensor: stored row " + std::to_string(r) + ": " + e.what());
        }
        q.scales[size_t(r)] = res.scale;
        row_error[size_t(r)] = res.error;
        row_norm[size_t(r)] = norm;
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

  double err = 0.0, norm = 0.0;
  for (int64_t r = 0; r < g.rows; ++r) {
    err += row_error[size_t(r)];
    norm += row_norm[size_t(r)];
  }
  q.rel_error = norm > 0.0 ? std::sqrt(err / norm) : 0.0;
  return q;
}

}  // namespace trellis
