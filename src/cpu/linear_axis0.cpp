// Axis-0 ("scatter") CPU trellis linear: stored rows are inputs, blocks run
// along the outputs. Output run ρ is the 32 outputs 32ρ … 32ρ+31 (block
// ρ/(T/32), run ρ mod (T/32) of every stored row). Work item = (N consecutive
// runs, one vector lane each, and a chunk of ≤ kRowsPerItem activation rows):
// for i ascending, the N runs of stored row i are decoded together
// (run_decode.hpp) and acc[m][u][lane] += w[u][lane]·xf[m][i], one fp32
// multiply then one fp32 add (one activation row takes the weights straight
// from the decode; more rows take kStepRows decoded stored rows from a buffer
// per pass over acc, adding them in order) — so each output is one fp32 sum
// with i ascending, no split-K, no thread-dependent reassociation. N is 16, or 8
// when 16-run items would leave a thread idle. Spare lanes of the last item
// are fed zero words and never stored.
#include <algorithm>
#include <vector>

#include "linear_kernels.hpp"
#include "parallel.hpp"
#include "run_decode.hpp"
#include "trellis/cpu/threads.hpp"

namespace trellis::cpu {

namespace {

constexpr int64_t kRowsPerItem = 16;  // acc = 16·32·N floats (32 KiB at N = 16)
constexpr int kStepRows = 4;  // stored rows per pass over acc when M > 1; divides rows (a multiple of 8)

struct Axis0 {
  const TrellisTensorView& w;
  Numerics mode;
  const float* xf;
  int64_t M;
  float* y;
  int64_t row_chunks, rows_per_chunk;
};

template <int N>
TRELLIS_CPU_INLINE void axis0_item(const Axis0& job, int64_t item, float* acc) {
  using F = typename Lanes<N>::f32;
  const TrellisGeometry& g = job.w.geom;
  const int64_t in = g.rows, out = g.cols, runs_per_block = g.T / kRunLength;
  const int64_t run0 = item / job.row_chunks * N;
  const int64_t m0 = item % job.row_chunks * job.rows_per_chunk;
  const int64_t m1 = std::min(job.M, m0 + job.rows_per_chunk);
  const int lanes = int(std::min<int64_t>(N, out / kRunLength - run0));
  // Stored row i's blocks lie row_stride words after row i−1's in both layouts.
  const int64_t row_stride = g.block_interleave == 2 ? 2 * g.words_per_block() : g.words_per_row();
  alignas(64) uint32_t words[kMaxRunWords * N];
  alignas(64) float wt[kStepRows * kRunLength * N];
  const uint32_t* blocks[N];
  int run_in_block[N];
  for (int l = 0; l < lanes; ++l) {
    blocks[l] = job.w.codes + g.block_offset(0, (run0 + l) / runs_per_block);
    run_in_block[l] = int((run0 + l) % runs_per_block);
  }
  std::fill(words, words + kMaxRunWords * N, 0u);
  std::fill(acc, acc + (m1 - m0) * kRunLength * N, 0.0f);
  auto gather_row = [&](int64_t i) TRELLIS_CPU_INLINE_LAMBDA {
    for (int l = 0; l < lanes; ++l) gather_run<N>(blocks[l] + i * row_stride, g, run_in_block[l], l, words);
    return F{} + (job.mode == Numerics::factored ? 1.0f : stored_row_factor(job.w, i));
  };
  if (m1 - m0 == 1) {
    for (int64_t i = 0; i < in; ++i) {
      const float xv = job.xf[m0 * in + i];
      decode_runs<N>(words, g.k, g.L, job.mode, gather_row(i), [&](int u, F w) TRELLIS_CPU_INLINE_LAMBDA {
        store_lanes(acc + u * N, load_lanes<F>(acc + u * N) + w * xv);
      });
    }
  } else {
    for (int64_t i = 0; i < in; i += kStepRows) {
      for (int r = 0; r < kStepRows; ++r)
        decode_runs<N>(words, g.k, g.L, job.mode, gather_row(i + r), [&](int u, F w) TRELLIS_CPU_INLINE_LAMBDA {
          store_lanes(wt + (r * kRunLength + u) * N, w);
        });
      for (int64_t m = m0; m < m1; ++m) {
        float xv[kStepRows];
        for (int r = 0; r < kStepRows; ++r) xv[r] = job.xf[m * in + i + r];
        float* a = acc + (m - m0) * kRunLength * N;
        for (int u = 0; u < kRunLength; ++u) {
          F sum = load_lanes<F>(a + u * N);
          for (int r = 0; r < kStepRows; ++r) sum += load_lanes<F>(wt + (r * kRunLength + u) * N) * xv[r];
          store_lanes(a + u * N, sum);
        }
      }
    }
  }
  for (int64_t m = m0; m < m1; ++m)
    for (int l = 0; l < lanes; ++l)
      for (int u = 0; u < kRunLength; ++u)
        job.y[m * out + (run0 + l) * kRunLength + u] = acc[((m - m0) * kRunLength + u) * N + l];
}

TRELLIS_CPU_CLONES void axis0_items16(const Axis0& job, int64_t begin, int64_t end, float* acc) {
  for (int64_t item = begin; item < end; ++item) axis0_item<16>(job, item, acc);
}

TRELLIS_CPU_CLONES void axis0_items8(const Axis0& job, int64_t begin, int64_t end, float* acc) {
  for (int64_t item = begin; item < end; ++item) axis0_item<8>(job, item, acc);
}

}  // namespace

void linear_axis0(const TrellisTensorView& w, Numerics mode, const float* xf, int64_t M, float* y) {
  const TrellisGeometry& g = w.geom;
  const int64_t runs = g.cols / kRunLength;
  const int N = (runs + 15) / 16 >= 2 * thread_count() ? 16 : 8;
  const int64_t groups = (runs + N - 1) / N;
  const int64_t want = (thread_count() + groups - 1) / groups;  // row chunks to fill the threads
  const int64_t chunks = std::min(M, std::max((M + kRowsPerItem - 1) / kRowsPerItem, want));
  const int64_t rows_per = (M + chunks - 1) / chunks;
  const Axis0 job{w, mode, xf, M, y, chunks, rows_per};
  parallel_for(groups * chunks, int64_t(N) * kRunLength * g.rows * rows_per, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(size_t(rows_per * kRunLength * N));
    if (N == 16)
      axis0_items16(job, begin, end, acc.data());
    else
      axis0_items8(job, begin, end, acc.data());
  });
}

}  // namespace trellis::cpu
