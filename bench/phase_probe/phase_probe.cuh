// Phase timestamps of the decode kernels, for bench/phase_probe/run.sh only:
// instrument.py copies this header next to the kernels and inserts the marks.
// Each work unit (a warpgroup of wgmma_axis1, a warp of mma_axis1, a block of imma_axis0) records
// %globaltimer at entry and exit and clock64 at its phase boundaries; after
// every launch the host synchronises, reads them back and accumulates the
// median and max of each phase over units; the table is written at exit to
// $PHASE_OUT (append) or stderr, in us at 1.98 GHz (the SM clock under load
// is lower: compare the span, from %globaltimer, with the sum of phases).
// The synchronisation inside each call makes the benchmark's own timings of
// the instrumented forms meaningless.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace probe {
constexpr int kMaxUnits = 4096;  // work units recorded per launch (mma_axis1: 20 warps × 132 SMs)
constexpr double kCyclesPerUs = 1980.0;  // the H200's 1.98 GHz (the header says why it is only nominal)
// [unit][0] gt entry, [1..6] clock64 marks or values, [7] gt end; g_extra[unit]: smid, chunks, flushes, unit tag
static __device__ unsigned long long g_phase[kMaxUnits][8];
static __device__ unsigned long long g_extra[kMaxUnits][4];
// staging sub-phases, indexed (block linear)*5 + threadIdx.x/128, by threads with threadIdx.x % 128 == 0
static __device__ unsigned long long g_stage[2048][4];
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long clk() { return (unsigned long long)clock64(); }
__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void stage_mark(int i) {
  if (threadIdx.x % 128 == 0) {
    const unsigned idx = (blockIdx.y * gridDim.x + blockIdx.x) * 5 + threadIdx.x / 128;
    if (idx < 2048) g_stage[idx][i] = clk();
  }
}

struct Acc {
  int launches = 0;
  std::vector<std::string> names;
  double span = 0, skew = 0;
  std::vector<double> dur, durmax;
  std::string last_detail;
};
struct Table {
  std::map<std::string, Acc> rows;
  ~Table() {
    FILE* f = std::getenv("PHASE_OUT") ? std::fopen(std::getenv("PHASE_OUT"), "a") : stderr;
    for (auto& [k, a] : rows) {
      std::fprintf(f, "%-36s n %3d span %6.2f us skew %5.2f |", k.c_str(), a.launches, a.span / a.launches / 1000,
                   a.skew / a.launches / 1000);
      for (size_t i = 0; i < a.names.size(); ++i)
        std::fprintf(f, " %s %.2f/%.2f", a.names[i].c_str(), a.dur[i] / a.launches / kCyclesPerUs,
                     a.durmax[i] / a.launches / kCyclesPerUs);
      std::fprintf(f, "\n%s", a.last_detail.c_str());
    }
    if (f != stderr) std::fclose(f);
  }
};
inline Table& table() {
  static Table t;
  return t;
}
// Percentiles of v in us: cycles by default, or pass 1000 for %globaltimer nanoseconds.
inline std::string pct(std::vector<double> v, double per_us = kCyclesPerUs) {
  std::sort(v.begin(), v.end());
  char b[200];
  const size_t n = v.size();
  const auto at = [&](size_t i) { return v[i] / per_us; };
  std::snprintf(b, sizeof b, "p0 %.2f p10 %.2f p50 %.2f p90 %.2f p99 %.2f max %.2f", at(0), at(n / 10), at(n / 2),
                at(n * 9 / 10), at(n * 99 / 100), at(n - 1));
  return b;
}
// spans (a, b): slot b - slot a (cycles); (a, -1): the value in slot a.
// detail_span: the phase whose distribution and slowest units are printed for the last launch;
// stage_index(u) maps a unit to its g_stage row. g_extra: wgmma (smid, chunks, flushes, block),
// axis0 (smid, slabs of warp 0, 0, 1000·column block + segment).
template <class StageIndex>
inline void collect(const std::string& label, int units, cudaStream_t s, const std::vector<std::string>& names,
                    const std::vector<std::pair<int, int>>& spans, int detail_span, StageIndex stage_index) {
  cudaStreamSynchronize(s);
  static unsigned long long h[kMaxUnits][8], x[kMaxUnits][4], st[2048][4];
  cudaMemcpyFromSymbol(h, g_phase, sizeof(unsigned long long) * 8 * units);
  cudaMemcpyFromSymbol(x, g_extra, sizeof(unsigned long long) * 4 * units);
  cudaMemcpyFromSymbol(st, g_stage, sizeof st);
  auto& t = table();
  Acc& a = t.rows[label];
  if (a.names.empty()) {
    a.names = names;
    a.names.insert(a.names.end(), {"s.xmax", "s.rmax", "s.conv", "s.rsum"});
    a.dur.assign(a.names.size(), 0), a.durmax.assign(a.names.size(), 0);
  }
  unsigned long long gmin = ~0ull, gmax = 0, emax = 0;
  for (int u = 0; u < units; ++u) gmin = std::min(gmin, h[u][0]), gmax = std::max(gmax, h[u][0]), emax = std::max(emax, h[u][7]);
  a.span += double(emax - gmin), a.skew += double(gmax - gmin);
  std::vector<std::vector<double>> all(a.names.size());
  for (int u = 0; u < units; ++u) {
    for (size_t i = 0; i < names.size(); ++i) {
      const auto [sa, sb] = spans[i];
      all[i].push_back(sb < 0 ? double(h[u][sa]) : double((long long)(h[u][sb] - h[u][sa])));
    }
    const int si = stage_index(u);
    // stage marks: [0] after first take_max (x arrived), [1] after max reduce, [2] after convert, [3] after sum + barrier
    // relative to the wait mark (slot 2)
    all[names.size() + 0].push_back(double((long long)(st[si][0] - h[u][2])));
    for (int j = 1; j < 4; ++j) all[names.size() + j].push_back(double((long long)(st[si][j] - st[si][j - 1])));
  }
  for (size_t i = 0; i < a.names.size(); ++i) {
    std::vector<double> v = all[i];
    std::sort(v.begin(), v.end());
    a.dur[i] += v[v.size() / 2], a.durmax[i] += v.back();
  }
  ++a.launches;
  // detail of this (the last) launch: distribution of the detail span and the slowest units
  std::string d = "    " + a.names[detail_span] + ": " + pct(all[detail_span]) + "\n";
  std::vector<int> order(units);
  for (int u = 0; u < units; ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](int p, int q) { return all[detail_span][p] > all[detail_span][q]; });
  std::map<unsigned long long, int> per_sm;
  for (int u = 0; u < units; ++u) ++per_sm[x[u][0]];
  // Per SM: when its last unit ended (%globaltimer, from the first unit's entry) and how far its units' ends
  // spread; a throughput-bound SM whose units end far apart ran its tail with fewer warps.
  {
    std::map<unsigned long long, std::pair<unsigned long long, unsigned long long>> ends;  // sm → (first, last)
    for (int u = 0; u < units; ++u) {
      auto [it, fresh] = ends.try_emplace(x[u][0], h[u][7], h[u][7]);
      if (!fresh) it->second.first = std::min(it->second.first, h[u][7]), it->second.second = std::max(it->second.second, h[u][7]);
    }
    std::vector<double> last, spread;
    for (const auto& [sm, fl] : ends) {
      last.push_back(double(fl.second - gmin));
      spread.push_back(double(fl.second - fl.first));
    }
    d += "    per SM, last end (gt): " + pct(last, 1000.0) + "\n    per SM, last - first end (gt): " + pct(spread, 1000.0) +
         "\n";
  }
  for (int r = 0; r < 6 && r < units; ++r) {
    const int u = order[r];
    char b[200];
    std::snprintf(b, sizeof b, "    slow #%d unit %d tag %llu sm %llu (units on sm %d) chunks %llu flushes %llu: %.2f us\n", r, u,
                  x[u][3], x[u][0], per_sm[x[u][0]], x[u][1], x[u][2], all[detail_span][u] / kCyclesPerUs);
    d += b;
  }
  {
    const int u = order[units / 2];
    char b[200];
    std::snprintf(b, sizeof b, "    median unit %d tag %llu sm %llu (units on sm %d) chunks %llu flushes %llu: %.2f us\n", u,
                  x[u][3], x[u][0], per_sm[x[u][0]], x[u][1], x[u][2], all[detail_span][u] / kCyclesPerUs);
    d += b;
  }
  a.last_detail = d;
}
}  // namespace probe
