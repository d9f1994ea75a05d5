// Axis-1 ("reduce") CPU trellis linear: stored rows are outputs, blocks run
// along the inputs. Work item = a group of 8 output rows: each block of the 8
// rows is decoded once into wt[t][j] (T×8 floats) and used by all M
// activation rows. The 8 accumulators of an activation row advance together
// along t (one 8-wide multiply-add per input), four activation rows at a time
// so the adds are independent chains; each output is still one fp32 sum with
// i ascending.
#include <algorithm>
#include <cstring>
#include <vector>

#include "block_weights.hpp"
#include "linear_kernels.hpp"
#include "parallel.hpp"

namespace trellis::cpu {

namespace {

constexpr int kGroup = 8;  // output rows per work item; SPEC §1 makes rows a multiple of 8

// Eight fp32 lanes, one per output row of the group (GCC/Clang vector
// extension; lane-wise mul and add, the same arithmetic as the scalar code).
typedef float Lanes __attribute__((vector_size(kGroup * sizeof(float))));

// acc[r][j] += Σ_t wt[t][j]·x[r·in + t] (t ascending) for R activation rows.
template <int R>
void accumulate(const float* wt, int T, const float* x, int64_t in, float* acc) {
  Lanes a[R];
  for (int r = 0; r < R; ++r) std::memcpy(&a[r], acc + r * kGroup, sizeof(Lanes));
  for (int t = 0; t < T; ++t) {
    Lanes wrow;
    std::memcpy(&wrow, wt + t * kGroup, sizeof(Lanes));
    for (int r = 0; r < R; ++r) a[r] += wrow * x[r * in + t];
  }
  for (int r = 0; r < R; ++r) std::memcpy(acc + r * kGroup, &a[r], sizeof(Lanes));
}

}  // namespace

void linear_axis1(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y) {
  const TrellisGeometry& g = w.geom;
  const int T = g.T;
  const int64_t in = g.cols, out = g.rows, nb = g.blocks_per_row();
  parallel_for(out / kGroup, kGroup * in * M, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> scratch(static_cast<size_t>(g.words_per_block() + 1));
    std::vector<float> wt(static_cast<size_t>(T) * kGroup);
    std::vector<float> acc(static_cast<size_t>(M) * kGroup);
    for (int64_t grp = begin; grp < end; ++grp) {
      const int64_t r0 = grp * kGroup;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t b = 0; b < nb; ++b) {
        for (int j = 0; j < kGroup; ++j) block_weights(w, r0 + j, b, mode, scratch.data(), wt.data() + j, kGroup);
        int64_t m = 0;
        for (; m + 4 <= M; m += 4) accumulate<4>(wt.data(), T, xf + m * in + b * T, in, acc.data() + m * kGroup);
        for (; m < M; ++m) accumulate<1>(wt.data(), T, xf + m * in + b * T, in, acc.data() + m * kGroup);
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
