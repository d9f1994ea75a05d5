#include "trellis_fixture.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>

#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/half.hpp"

namespace trellis::test {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::mt19937_64 fresh_rng(const char* test) {
  const uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::printf("[%s] seed %llu\n", test, static_cast<unsigned long long>(seed));
  return std::mt19937_64(seed);
}

RandomTrellis::RandomTrellis(const TrellisGeometry& g, std::mt19937_64& rng) : geom(g) {
  codes.resize(size_t(g.total_words()));
  for (auto& w : codes) w = uint32_t(rng());
  std::uniform_real_distribution<float> scale(0.005f, 0.05f);
  scales.resize(size_t(g.rows));
  for (auto& s : scales) s = float_to_fp16(scale(rng));
  if (cudaMalloc(&d_codes, codes.size() * 4) != cudaSuccess || cudaMalloc(&d_scales, scales.size() * 2) != cudaSuccess)
    throw std::runtime_error("cudaMalloc failed");
  cudaMemcpy(d_codes, codes.data(), codes.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_scales, scales.data(), scales.size() * 2, cudaMemcpyHostToDevice);
}

RandomTrellis::~RandomTrellis() {
  cudaFree(d_codes);
  cudaFree(d_scales);
}

DeviceBf16::DeviceBf16(std::size_t n) : host(n) {
  if (cudaMalloc(&dev, n * 2) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
}
DeviceBf16::~DeviceBf16() { cudaFree(dev); }
void DeviceBf16::randomize(std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& v : host) v = float_to_bf16(d(rng));
  upload();
}
void DeviceBf16::upload() { cudaMemcpy(dev, host.data(), host.size() * 2, cudaMemcpyHostToDevice); }
void DeviceBf16::poison() { cudaMemset(dev, 0xff, host.size() * 2); }
void DeviceBf16::download() { cudaMemcpy(host.data(), dev, host.size() * 2, cudaMemcpyDeviceToHost); }

std::vector<double> reference_linear(const TrellisTensorView& w, const std::vector<uint16_t>& x, int M) {
  const TrellisGeometry& g = w.geom;
  const int64_t out_n = g.out_features, in_n = g.in_features;
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = bf16_to_float(x[i]);
  const int nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<double>> part(size_t(nt), std::vector<double>(size_t(M * out_n), 0.0));
  std::vector<std::thread> pool;
  for (int t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      std::vector<uint32_t> states(size_t(g.T));
      std::vector<double> acc = std::vector<double>(size_t(M), 0.0);
      auto& mine = part[size_t(t)];
      for (int64_t r = t; r < g.rows; r += nt) {
        const double f = double(row_factor(fp16_to_float(w.scales[r])));
        for (int64_t b = 0; b < g.blocks_per_row(); ++b) {
          decode_block_states(w.codes + g.block_offset(r, b), g.T, g.k, g.L, states.data());
          for (int tt = 0; tt < g.T; ++tt) {
            const double wv = double(float(code_value(states[size_t(tt)])) * float(f));
            const int64_t c = b * g.T + tt;
            const int64_t o = g.axis == 1 ? r : c, i = g.axis == 1 ? c : r;
            for (int m = 0; m < M; ++m) mine[size_t(m * out_n + o)] += wv * xd[size_t(m * in_n + i)];
          }
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  std::vector<double> ref(size_t(M * out_n), 0.0);
  for (const auto& p : part)
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += p[i];
  return ref;
}

double relative_error(const std::vector<uint16_t>& out, const std::vector<double>& ref, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double o = bf16_to_float(out[i]);
    if (!std::isfinite(o)) return std::numeric_limits<double>::infinity();
    num += (o - ref[i]) * (o - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

std::vector<uint32_t> interleave_k3(const TrellisGeometry& g, const std::vector<uint32_t>& codes) {
  TrellisGeometry il = g;
  il.block_interleave = 2;
  std::vector<uint32_t> out(codes.size());
  const int wpb = g.words_per_block();
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t b = 0; b < g.blocks_per_row(); ++b)
      for (int i = 0; i < wpb; ++i) out[size_t(il.block_offset(r, b) + i)] = codes[size_t(g.block_offset(r, b) + i)];
  return out;
}

}  // namespace trellis::test
