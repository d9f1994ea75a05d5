// Bit-exact conversions between float32 and the 16-bit formats the format uses
// (IEEE binary16 for scales, bfloat16 for activations and expanded weights).
// Rounding is round-to-nearest-even everywhere; NaN stays NaN.
#pragma once
#include <cstdint>
#include <cstring>

#include "trellis/hd.hpp"

namespace trellis {

TRELLIS_HD float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
TRELLIS_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// bfloat16 <-> float32.
TRELLIS_HD float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }
TRELLIS_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
// float32 rounded to the nearest bfloat16, as a float32.
TRELLIS_HD float round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

// IEEE binary16 <-> float32.
TRELLIS_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
  // zero or subnormal: man * 2^-24
  const float v = float(man) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}
TRELLIS_HD uint16_t float_to_fp16(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (a >= 0x38800000u) {                                  // normal half
    const uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return uint16_t(sign | (r >> 13));
  }
  // subnormal half (or zero): round a * 2^24 to an integer, ties to even
  const float scaled = bits_to_float(a) * 16777216.0f;
  uint32_t m = uint32_t(scaled);
  const float frac = scaled - float(m);
  if (frac > 0.5f || (frac == 0.5f && (m & 1u))) ++m;
  return uint16_t(sign | m);
}

}  // namespace trellis
