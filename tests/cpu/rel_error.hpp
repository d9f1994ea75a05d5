// Test support: ‖out − ref‖₂ / ‖ref‖₂ over whole outputs, with NaN (e.g. a
// poisoned element the kernel never wrote) giving +inf so it never passes,
// and the NaN poison patterns written before each kernel call.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "trellis/half.hpp"

namespace trellis::test {

inline constexpr uint16_t kPoisonBf16 = 0x7fc1;
inline constexpr float kPoisonF32 = std::numeric_limits<float>::quiet_NaN();

inline double rel_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) return std::numeric_limits<double>::infinity();
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

inline std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline std::vector<double> widen(const std::vector<uint16_t>& bf16) {
  std::vector<double> d(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) d[i] = double(bf16_to_float(bf16[i]));
  return d;
}

inline std::vector<float> bf16_to_f32(const std::vector<uint16_t>& bf16) {
  std::vector<float> f(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) f[i] = bf16_to_float(bf16[i]);
  return f;
}

}  // namespace trellis::test
