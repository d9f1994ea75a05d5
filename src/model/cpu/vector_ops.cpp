// Row-wise fp32 ops (contract in vector_ops.hpp).
#include "vector_ops.hpp"

#include <cmath>
#include <vector>

namespace trellis::model::cpu {

void rmsnorm(const float* x, int64_t rows, int64_t cols, std::span<const float> w, float eps, float* out) {
  const int64_t n = int64_t(w.size());
  for (int64_t g = 0; g < rows * cols / n; ++g) {
    const float* in = x + g * n;
    float* o = out + g * n;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(in[i]) * double(in[i]);
    const float scale = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (int64_t i = 0; i < n; ++i) o[i] = in[i] * scale * w[size_t(i)];
  }
}

void rope(float* x, int64_t rows, int64_t cols, std::span<const float> f, int64_t pos0) {
  const int64_t half = int64_t(f.size()), head_dim = 2 * half;
  std::vector<float> c(f.size()), s(f.size());
  for (int64_t m = 0; m < rows; ++m) {
    const float p = float(pos0 + m);
    for (size_t i = 0; i < f.size(); ++i) {
      const float angle = p * f[i];
      c[i] = float(std::cos(double(angle)));
      s[i] = float(std::sin(double(angle)));
    }
    for (int64_t h = 0; h < cols / head_dim; ++h) {
      float* v = x + m * cols + h * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[size_t(i)] - b * s[size_t(i)];
        v[i + half] = b * c[size_t(i)] + a * s[size_t(i)];
      }
    }
  }
}

void add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace trellis::model::cpu
