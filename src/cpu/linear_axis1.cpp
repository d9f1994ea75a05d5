// Axis-1 ("reduce") CPU trellis linear: stored rows are outputs, blocks run
// along the inputs. Work item = a group of kLanes output rows, one vector lane
// each (the last group of a matrix whose rows are not a multiple of kLanes
// has its spare lanes fed zero words and factor 0, and never stored). Block
// b of the group's rows is laid out lane by lane once (gather_block); each of
// its runs j, inputs i = b·T + 32j + u, is decoded for all lanes together
// (run_decode.hpp) and used by every activation row:
// acc[m][lane] += w[u][lane]·xf[m][i], one fp32 multiply then one fp32 add,
// u ascending — so each output is one fp32 sum with i ascending. Up to four
// activation rows take the weights straight from the decode; more rows take
// them from a buffer, four rows at a time (independent add chains). The
// factored mode multiplies the sum by f_r at the end.
#include <algorithm>
#include <vector>

#include "linear_kernels.hpp"
#include "parallel.hpp"
#include "run_decode.hpp"

namespace trellis::cpu {

namespace {

constexpr int kLanes = 16;
constexpr int kRowBlock = 4;
using F = Lanes<kLanes>::f32;

struct Axis1 {
  const TrellisTensorView& w;
  Numerics mode;
  const float* xf;
  int64_t M;
  float* y;
};

// acc[r] += Σ_u w_u·x[r·in + u] (u ascending) for R activation rows, the
// weights coming from decode_runs.
template <int R>
TRELLIS_CPU_INLINE void decode_into(const uint32_t* words, const TrellisGeometry& g, Numerics mode, F f,
                                    const float* x, int64_t in, float* acc) {
  F a[R];
  for (int r = 0; r < R; ++r) a[r] = load_lanes<F>(acc + r * kLanes);
  decode_runs<kLanes>(words, g.k, g.L, mode, f, [&](int u, F w) TRELLIS_CPU_INLINE_LAMBDA {
    for (int r = 0; r < R; ++r) a[r] += w * x[r * in + u];
  });
  for (int r = 0; r < R; ++r) store_lanes(acc + r * kLanes, a[r]);
}

// acc[r] += Σ_u wt[u]·x[r·in + u] (u ascending) for R activation rows.
template <int R>
TRELLIS_CPU_INLINE void accumulate(const float* wt, const float* x, int64_t in, float* acc) {
  F a[R];
  for (int r = 0; r < R; ++r) a[r] = load_lanes<F>(acc + r * kLanes);
  for (int u = 0; u < kRunLength; ++u) {
    const F w = load_lanes<F>(wt + u * kLanes);
    for (int r = 0; r < R; ++r) a[r] += w * x[r * in + u];
  }
  for (int r = 0; r < R; ++r) store_lanes(acc + r * kLanes, a[r]);
}

TRELLIS_CPU_CLONES void axis1_groups(const Axis1& job, int64_t begin, int64_t end, uint32_t* words,
                                     float* acc) {
  const TrellisGeometry& g = job.w.geom;
  const int64_t in = g.cols, out = g.rows, nb = g.blocks_per_row(), M = job.M;
  const int wpb = g.words_per_block(), runs = g.T / kRunLength;
  const int64_t row_words = g.words_per_row();  // axis 1 is always row-major
  alignas(64) float wt[kRunLength * kLanes];
  alignas(64) float factors[kLanes];
  for (int64_t grp = begin; grp < end; ++grp) {
    const int64_t r0 = grp * kLanes;
    const int lanes = int(std::min<int64_t>(kLanes, out - r0));
    std::fill(words, words + (wpb + 1) * kLanes, 0u);
    for (int l = 0; l < kLanes; ++l) factors[l] = l < lanes ? stored_row_factor(job.w, r0 + l) : 0.0f;
    const F f = load_lanes<F>(factors);
    std::fill(acc, acc + M * kLanes, 0.0f);
    for (int64_t b = 0; b < nb; ++b) {
      const uint32_t* block = job.w.codes + g.block_offset(r0, b);
      for (int l = 0; l < lanes; ++l) gather_block<kLanes>(block + l * row_words, wpb, l, words);
      for (int j = 0; j < runs; ++j) {
        const uint32_t* run = words + (runs - 1 - j) * g.k * kLanes;
        const float* x = job.xf + b * g.T + j * kRunLength;
        switch (M) {
          case 1: decode_into<1>(run, g, job.mode, f, x, in, acc); break;
          case 2: decode_into<2>(run, g, job.mode, f, x, in, acc); break;
          case 3: decode_into<3>(run, g, job.mode, f, x, in, acc); break;
          case 4: decode_into<4>(run, g, job.mode, f, x, in, acc); break;
          default: {
            decode_runs<kLanes>(run, g.k, g.L, job.mode, f,
                                      [&](int u, F w) TRELLIS_CPU_INLINE_LAMBDA { store_lanes(wt + u * kLanes, w); });
            int64_t m = 0;
            for (; m + kRowBlock <= M; m += kRowBlock)
              accumulate<kRowBlock>(wt, x + m * in, in, acc + m * kLanes);
            for (; m < M; ++m) accumulate<1>(wt, x + m * in, in, acc + m * kLanes);
          }
        }
      }
    }
    for (int64_t m = 0; m < M; ++m)
      for (int l = 0; l < lanes; ++l) {
        const float v = acc[m * kLanes + l];
        job.y[m * out + r0 + l] = job.mode == Numerics::factored ? v * factors[l] : v;
      }
  }
}

}  // namespace

void linear_axis1(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y) {
  const TrellisGeometry& g = w.geom;
  const Axis1 job{w, mode, xf, M, y};
  const int64_t groups = (g.rows + kLanes - 1) / kLanes;
  parallel_for(groups, kLanes * g.cols * M, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> words(size_t(g.words_per_block() + 1) * kLanes);
    std::vector<float> acc(size_t(M * kLanes));
    axis1_groups(job, begin, end, words.data(), acc.data());
  });
}

}  // namespace trellis::cpu
