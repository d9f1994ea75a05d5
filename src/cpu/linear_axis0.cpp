// Axis-0 ("scatter") CPU trellis linear: stored rows are inputs, blocks run
// along the outputs. Work item = (output block b, chunk of activation rows):
// for i ascending, block (i, b) is decoded once and acc[m][t] += w[t]·xf[m][i]
// for the chunk's rows (vectorized over t), so each output is one fp32 sum
// with i ascending — no split-K, hence no thread-dependent reassociation.
// Row chunks (≤ kRowsPerItem) keep acc in cache for long prefills and give
// threads work when there are fewer output blocks than threads.
#include <algorithm>
#include <vector>

#include "block_weights.hpp"
#include "linear_kernels.hpp"
#include "parallel.hpp"
#include "trellis/cpu/threads.hpp"

namespace trellis::cpu {

namespace {
constexpr int64_t kRowsPerItem = 64;  // acc = 64·T floats (64 KiB at T = 256)
}

void linear_axis0(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y) {
  const TrellisGeometry& g = w.geom;
  const int T = g.T;
  const int64_t in = g.rows, out = g.cols, nb = g.blocks_per_row();
  const int64_t want = (thread_count() + nb - 1) / nb;  // row chunks to fill the threads
  const int64_t chunks = std::min(M, std::max((M + kRowsPerItem - 1) / kRowsPerItem, want));
  const int64_t rows_per = (M + chunks - 1) / chunks;
  parallel_for(nb * chunks, int64_t(T) * in * rows_per, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> scratch(static_cast<size_t>(g.words_per_block() + 1));
    std::vector<float> wt(static_cast<size_t>(T));
    std::vector<float> acc(size_t(rows_per) * size_t(T));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / chunks;
      const int64_t m0 = (item % chunks) * rows_per, m1 = std::min(M, m0 + rows_per);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t i = 0; i < in; ++i) {
        block_weights(w, i, b, mode, scratch.data(), wt.data(), 1);
        for (int64_t m = m0; m < m1; ++m) {
          const float xv = xf[m * in + i];
          float* a = acc.data() + size_t(m - m0) * size_t(T);
          for (int t = 0; t < T; ++t) a[t] += wt[size_t(t)] * xv;
        }
      }
      for (int64_t m = m0; m < m1; ++m)
        std::copy_n(acc.data() + size_t(m - m0) * size_t(T), T, y + m * out + b * T);
    }
  });
}

}  // namespace trellis::cpu
