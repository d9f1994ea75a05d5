// Axis-1 ("reduce") CPU trellis linear: stored rows are outputs, blocks run
// along the inputs. Work item = a group of 8 output rows: each block of the 8
// rows is decoded once into wt[t][j] (T×8 floats) and used by all M
// activation rows; the 8 accumulators of a row m advance together along t
// (one vector FMA-width step per input), so each output is still one fp32
// sum with i ascending.
#include <algorithm>
#include <vector>

#include "block_weights.hpp"
#include "linear_kernels.hpp"
#include "parallel.hpp"

namespace trellis::cpu {

namespace {
constexpr int kGroup = 8;  // rows per work item; SPEC §1 makes rows a multiple of 8
}

void linear_axis1(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y) {
  const TrellisGeometry& g = w.geom;
  const int T = g.T;
  const int64_t in = g.cols, out = g.rows, nb = g.blocks_per_row();
  parallel_for(out / kGroup, kGroup * in * M, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> states(static_cast<size_t>(T));
    std::vector<float> wt(size_t(T) * kGroup);
    std::vector<float> acc(size_t(M) * kGroup);
    for (int64_t grp = begin; grp < end; ++grp) {
      const int64_t r0 = grp * kGroup;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t b = 0; b < nb; ++b) {
        for (int j = 0; j < kGroup; ++j) block_weights(w, r0 + j, b, mode, states.data(), wt.data() + j, kGroup);
        for (int64_t m = 0; m < M; ++m) {
          const float* xm = xf + m * in + b * T;
          float a[kGroup];
          for (int j = 0; j < kGroup; ++j) a[j] = acc[size_t(m * kGroup + j)];
          for (int t = 0; t < T; ++t) {
            const float xv = xm[t];
            const float* wrow = wt.data() + size_t(t) * kGroup;
            for (int j = 0; j < kGroup; ++j) a[j] += wrow[j] * xv;
          }
          for (int j = 0; j < kGroup; ++j) acc[size_t(m * kGroup + j)] = a[j];
        }
      }
      for (int j = 0; j < kGroup; ++j) {
        const float f = mode == Numerics::factored ? stored_row_factor(w, r0 + j) : 1.0f;
        for (int64_t m = 0; m < M; ++m) {
          const float v = acc[size_t(m * kGroup + j)];
          y[m * out + r0 + j] = mode == Numerics::factored ? v * f : v;
        }
      }
    }
  });
}

}  // namespace trellis::cpu
