// Roofline benchmark of the CUDA trellis forms (issue 3).
//
// For each op (fused gate/up/SwiGLU, axis-1 linear, axis-0 down), shape, k, M
// and form: the median time of >= 50 launches, each timed with its own pair of
// events, rotating over >= 4 weight copies and enough copies to exceed 4x the
// L2, so weights stream from HBM as in a real decode step. Reported with
// weights/s, effective GB/s (codes + scales + activations + outputs), the
// percentage of the measured device-to-device copy bandwidth, and cuBLAS bf16
// on the same shape and M in the same run (also rotating weight copies).
// The CUDA-core forms run in their default numerics (default_numerics).
//
// Usage: trellis_kernels_bench OUT.json [--quick] [--only OP,...] [--k K,...]
//   --quick: M = 1, 4 and 8 only; --only: just these ops (gate_up, down, up, q_o, k_v, qkv);
//   --k: just these bit widths (default 2,3,4).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "trellis/cuda/trellis_ops.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"

namespace {

using trellis::Numerics;
using trellis::SwigluTail;
using trellis::TrellisGeometry;
using trellis::TrellisTensorView;
using trellis::cuda::Form;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median GPU time of one call: all calls are queued back to back, each
// between its own pair of events, so the times exclude host launch latency
// (as inside a CUDA graph) but include every kernel the call launches.
float median_us(const std::function<void(int)>& launch, int iters = 60) {
  std::vector<cudaEvent_t> ev(size_t(2 * iters));
  for (auto& e : ev) cudaEventCreate(&e);
  for (int i = 0; i < 5; ++i) launch(i);
  ck(cudaGetLastError(), "warmup launch");
  ck(cudaDeviceSynchronize(), "warmup");
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(ev[size_t(2 * i)]);
    launch(i);
    cudaEventRecord(ev[size_t(2 * i + 1)]);
  }
  ck(cudaGetLastError(), "timed launch");
  ck(cudaDeviceSynchronize(), "timed launches");
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    cudaEventElapsedTime(&ms, ev[size_t(2 * i)], ev[size_t(2 * i + 1)]);
    t.push_back(ms * 1000.0f);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::mt19937_64 rng(20261202);

// Several device copies of one random trellis tensor.
struct Copies {
  TrellisGeometry geom;
  std::vector<uint32_t*> codes;
  uint16_t* scales = nullptr;
  Copies(const TrellisGeometry& g, std::size_t min_total_bytes) : geom(g) {
    std::vector<uint32_t> h(size_t(g.total_words()));
    for (auto& w : h) w = uint32_t(rng());
    std::vector<uint16_t> s(size_t(g.rows));
    std::uniform_real_distribution<float> d(0.005f, 0.05f);
    for (auto& v : s) v = trellis::float_to_fp16(d(rng));
    const std::size_t bytes = h.size() * 4;
    const int n = int(std::max<std::size_t>(4, (min_total_bytes + bytes - 1) / bytes));
    for (int i = 0; i < n; ++i) {
      uint32_t* p = nullptr;
      ck(cudaMalloc(&p, bytes), "cudaMalloc codes");
      ck(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice), "upload codes");
      codes.push_back(p);
    }
    ck(cudaMalloc(&scales, s.size() * 2), "cudaMalloc scales");
    ck(cudaMemcpy(scales, s.data(), s.size() * 2, cudaMemcpyHostToDevice), "upload scales");
  }
  ~Copies() {
    for (auto p : codes) cudaFree(p);
    cudaFree(scales);
  }
  TrellisTensorView view(int i) const { return {codes[size_t(i) % codes.size()], scales, geom}; }
  double code_bytes() const { return double(geom.total_words()) * 4.0 + double(geom.rows) * 2.0; }
};

struct Bf16Copies {
  std::vector<uint16_t*> w;
  Bf16Copies(int64_t rows, int64_t cols, std::size_t min_total_bytes) {
    const std::size_t bytes = std::size_t(rows * cols) * 2;
    const int n = int(std::max<std::size_t>(4, (min_total_bytes + bytes - 1) / bytes));
    std::vector<uint16_t> h(std::size_t(rows * cols));
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (auto& v : h) v = trellis::float_to_bf16(d(rng));
    for (int i = 0; i < n; ++i) {
      uint16_t* p = nullptr;
      ck(cudaMalloc(&p, bytes), "cudaMalloc bf16");
      ck(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice), "upload bf16");
      w.push_back(p);
    }
  }
  ~Bf16Copies() {
    for (auto p : w) cudaFree(p);
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, usage_error = argc < 2;
  std::string only;
  std::vector<int> ks = {2, 3, 4};
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else if (arg == "--k" && i + 1 < argc) {
      ks.clear();
      for (const char* c = argv[++i]; *c; ++c)
        if (*c >= '2' && *c <= '4') ks.push_back(*c - '0');
        else if (*c != ',') usage_error = true;
    } else {
      usage_error = true;
    }
  }
  if (usage_error || ks.empty()) {
    std::fprintf(stderr, "usage: %s OUT.json [--quick] [--only OP,...] [--k K,...]   (ops: gate_up, down, up, q_o, k_v, qkv; k: 2, 3, 4)\n",
                 argv[0]);
    return 2;
  }
  const auto wanted = [&](const char* op) { return only.empty() || only.find("," + std::string(op) + ",") != std::string::npos; };
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "properties");
  int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  const std::size_t l2 = std::size_t(prop.l2CacheSize);
  const std::size_t rotate_bytes = 4 * l2;

  // Copy bandwidth (read + write), the ceiling for streaming kernels.
  double copy_gbs = 0;
  {
    const std::size_t n = std::size_t(2) << 30;
    void *a = nullptr, *b = nullptr;
    ck(cudaMalloc(&a, n), "copy a");
    ck(cudaMalloc(&b, n), "copy b");
    cudaMemset(a, 1, n);
    const float us = median_us([&](int) { cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice); }, 20);
    copy_gbs = 2.0 * double(n) / (us * 1e-6) / 1e9;
    cudaFree(a);
    cudaFree(b);
  }
  std::printf("%s, %d SMs, L2 %zu MB, copy %.0f GB/s\n", prop.name, prop.multiProcessorCount, l2 >> 20, copy_gbs);

  trellis::cuda::Context ctx;
  cublasHandle_t cublas = static_cast<cublasHandle_t>(ctx.cublas());
  uint16_t *x = nullptr, *y = nullptr;
  const std::size_t maxn = 8 * 17408;
  ck(cudaMalloc(&x, maxn * 2), "x");
  ck(cudaMalloc(&y, maxn * 2), "y");
  {
    std::vector<uint16_t> hx(maxn);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& v : hx) v = trellis::float_to_bf16(d(rng));
    cudaMemcpy(x, hx.data(), maxn * 2, cudaMemcpyHostToDevice);
  }

  nlohmann::json results = nlohmann::json::array();
  const std::vector<int> ms = quick ? std::vector<int>{1, 4, 8} : std::vector<int>{1, 2, 4, 8};

  auto cublas_us = [&](int64_t out, int64_t in, int M, int nmat) {
    Bf16Copies w(out, in, rotate_bytes);
    const float one = 1, zero = 0;
    return median_us([&](int i) {
      for (int p = 0; p < nmat; ++p)
        cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(out), M, int(in), &one, w.w[size_t(i * nmat + p) % w.w.size()],
                     CUDA_R_16BF, int(in), x, CUDA_R_16BF, int(in), &zero, y, CUDA_R_16BF, int(out), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
    });
  };

  auto record = [&](const char* op, const char* form, Numerics mode, int64_t out, int64_t in, int k, int M,
                    int nmat, float us, double bytes, float cublas) {
    const double weights = double(out) * double(in) * nmat;
    const double gbs = bytes / (us * 1e-6) / 1e9;
    nlohmann::json r = {{"op", op},          {"form", form},
                        {"numerics", trellis::to_string(mode)},
                        {"out", out},        {"in", in},
                        {"k", k},            {"M", M},
                        {"median_us", us},   {"weights_per_s", weights / (us * 1e-6)},
                        {"effective_gbs", gbs},
                        {"pct_of_copy_bw", 100.0 * gbs / copy_gbs},
                        {"cublas_bf16_us", cublas},
                        {"speedup_vs_cublas_bf16", cublas / us}};
    results.push_back(r);
    std::printf("%-8s %-14s %-9s %6lldx%-6lld k=%d M=%d: %8.1f us  %5.2f Tw/s  %6.0f GB/s (%3.0f%%)  cuBLAS %6.1f us  x%.2f\n",
                op, form, trellis::to_string(mode), (long long)out, (long long)in, k, M, us, weights / (us * 1e-6) / 1e12,
                gbs, 100.0 * gbs / copy_gbs, cublas, cublas / us);
    std::fflush(stdout);
  };

  // Fused gate/up/SwiGLU, Qwen3-14B MLP: 2 x (17408 x 5120).
  if (wanted("gate_up")) {
    const int64_t out = 17408, in = 5120;
    for (int M : ms) {
      const float cub = cublas_us(out, in, M, 2);
      for (int k : ks) {
        Copies gate(trellis::make_geometry(k, 12, 256, 1, out, in), rotate_bytes / 2);
        Copies up(trellis::make_geometry(k, 12, 256, 1, out, in), rotate_bytes / 2);
        const double bytes = gate.code_bytes() + up.code_bytes() + double(M) * in * 2 + double(M) * out * 2;
        const std::pair<Form, Numerics> forms[] = {
            {Form::imma, Numerics::factored},
            {Form::mma, Numerics::factored},
            {Form::gate_up, trellis::cuda::default_numerics(Form::gate_up)}};
        for (const auto& [form, mode] : forms) {
          if (!trellis::cuda::form_supports(form, gate.geom, M, mode)) continue;
          const float us = median_us([&](int i) {
            trellis::cuda::gate_up_swiglu(ctx, gate.view(i), up.view(i), x, M, y, form, mode, SwigluTail::fused);
          });
          record("gate_up", trellis::cuda::to_string(form), mode, out, in, k, M, 2, us, bytes, cub);
        }
      }
    }
  }
  // Linear forms: axis-0 down (5120 x 17408) and axis-1 shapes of Qwen3-14B.
  struct LinearCase {
    const char* op;
    int64_t out, in;
    int axis;
  };
  const LinearCase cases[] = {{"down", 5120, 17408, 0},
                              {"up", 17408, 5120, 1},
                              {"q_o", 5120, 5120, 1},
                              {"k_v", 1024, 5120, 1}};
  for (const auto& c : cases) {
    if (!wanted(c.op)) continue;
    for (int M : ms) {
      const float cub = cublas_us(c.out, c.in, M, 1);
      for (int k : ks) {
        Copies w(trellis::make_geometry(k, 12, 256, c.axis, c.out, c.in), rotate_bytes);
        const double bytes = w.code_bytes() + double(M) * c.in * 2 + double(M) * c.out * 2;
        const Form core = c.axis == 1 ? Form::reduce : Form::scatter;
        const std::pair<Form, Numerics> forms[] = {
            {Form::imma, Numerics::factored},
            {Form::mma, Numerics::factored},
            {core, trellis::cuda::default_numerics(core)}};
        for (const auto& [form, mode] : forms) {
          if (!trellis::cuda::form_supports(form, w.geom, M, mode)) continue;
          const float us = median_us([&](int i) { trellis::cuda::linear(ctx, w.view(i), x, M, y, form, mode); });
          record(c.op, trellis::cuda::to_string(form), mode, c.out, c.in, k, M, 1, us, bytes, cub);
        }
        if (M == 1 && !quick) {
          const float us = median_us([&](int i) {
            trellis::cuda::linear(ctx, w.view(i), x, M, y, Form::expand_cublas, Numerics::rounded);
          }, 20);
          record(c.op, "expand_cublas", Numerics::rounded, c.out, c.in, k, M, 1, us, bytes, cub);
        }
      }
    }
  }

  // A layer's q, k and v (Qwen3-14B: 5120, 1024 and 1024 rows of 5120) in one
  // linear_group call, as a decode step makes it: one stacked launch for the
  // reduce form, three launches for imma. cuBLAS: the 7168 rows as one matrix.
  if (wanted("qkv")) {
    const int64_t in = 5120, rows[3] = {5120, 1024, 1024}, total_rows = 7168;
    for (int M : ms) {
      const float cub = cublas_us(total_rows, in, M, 1);
      for (int k : ks) {
        std::unique_ptr<Copies> w[3];
        double bytes = double(M) * in * 2 + double(M) * total_rows * 2;
        for (int p = 0; p < 3; ++p) {
          w[p] = std::make_unique<Copies>(trellis::make_geometry(k, 12, 256, 1, rows[p], in), rotate_bytes);
          bytes += w[p]->code_bytes();
        }
        const std::pair<Form, Numerics> forms[] = {{Form::imma, Numerics::factored},
                                                   {Form::reduce, trellis::cuda::default_numerics(Form::reduce)}};
        for (const auto& [form, mode] : forms) {
          if (!trellis::cuda::form_supports(form, w[0]->geom, M, mode) ||
              !trellis::cuda::form_supports(form, w[1]->geom, M, mode))
            continue;
          const float us = median_us([&](int i) {
            TrellisTensorView views[3];
            trellis::cuda::LinearCall calls[3];
            uint16_t* out = y;
            for (int p = 0; p < 3; ++p) {
              views[p] = w[p]->view(i);
              calls[p] = {&views[p], out, form, mode};
              out += M * rows[p];
            }
            trellis::cuda::linear_group(ctx, calls, 3, x, M);
          });
          record("qkv", trellis::cuda::to_string(form), mode, total_rows, in, k, M, 1, us, bytes, cub);
        }
      }
    }
  }

  const char* commit = std::getenv("TRELLIS_COMMIT");
  nlohmann::json doc = {{"bench", "trellis_kernels"},
                        {"gpu", prop.name},
                        {"sm_count", prop.multiProcessorCount},
                        {"l2_bytes", l2},
                        {"sm_clock_mhz", clock_khz / 1000},
                        {"mem_clock_mhz", mem_clock_khz / 1000},
                        {"driver_version", driver},
                        {"runtime_version", runtime},
                        {"commit", commit ? commit : "unknown"},
                        {"copy_gbs", copy_gbs},
                        {"method", "median of 60 calls (20 for expand_cublas) queued back to back, each between its own "
                                   "event pair (no host launch latency); weights rotated over >= 4 copies totalling "
                                   ">= 4x L2; times include activation staging"},
                        {"results", results}};
  std::ofstream(argv[1]) << doc.dump(1) << "\n";
  return 0;
}
