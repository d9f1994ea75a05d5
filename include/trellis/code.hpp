// The computed "1MAD" code and the bitshift-trellis window (SPEC §2).
//
//   y(s)  = bytesum((s * 34038481 + 76625530) mod 2^32) - 510     in [-510, 510]
//   w     = float32(y) * f_r,   f_r = float32(scale_r) * RCP,  RCP = float32(1/147.800537109375)
//
// A block of T positions is a circular stream of T*k bits (bit i = bit i%32
// of word i/32). state_t is the L-bit window starting at stream bit
// (T-1-t)*k, wrapping, least significant bit first. Usable on host and device.
#pragma once
#include <cstdint>

#include "trellis/hd.hpp"

namespace trellis {

inline constexpr uint32_t kCodeMul = 34038481u;
inline constexpr uint32_t kCodeAdd = 76625530u;
inline constexpr int kCodeBias = 510;
// float32(1 / 147.800537109375): the code's standard deviation, inverted.
inline constexpr float kCodeRcp = float(1.0 / 147.800537109375);

// The hashed word whose bytes sum to y + 510.
TRELLIS_HD constexpr uint32_t code_hash(uint32_t state) { return state * kCodeMul + kCodeAdd; }

TRELLIS_HD constexpr int code_value(uint32_t state) {
  const uint32_t h = code_hash(state);
  return int((h & 255u) + ((h >> 8) & 255u) + ((h >> 16) & 255u) + (h >> 24)) - kCodeBias;
}

// Row factor f_r from the stored fp16 scale (already widened to float).
TRELLIS_HD float row_factor(float scale) { return scale * kCodeRcp; }

// state_t of one block, by the definition (any t, any k, L <= 32).
TRELLIS_HD uint32_t block_state(const uint32_t* words, int T, int k, int L, int t) {
  const uint32_t nbits = uint32_t(T) * uint32_t(k);
  const uint32_t start = uint32_t(T - 1 - t) * uint32_t(k);
  // Gather L bits, at most two word pieces plus a wrap.
  uint32_t s = 0;
  int got = 0;
  uint32_t pos = start;
  while (got < L) {
    const uint32_t word = words[pos >> 5];
    const int off = int(pos & 31u);
    int take = 32 - off;
    if (take > L - got) take = L - got;
    const uint32_t remaining_in_stream = nbits - pos;
    if (uint32_t(take) > remaining_in_stream) take = int(remaining_in_stream);
    const uint32_t piece = (word >> off) & (take == 32 ? 0xffffffffu : ((1u << take) - 1u));
    s |= piece << got;
    got += take;
    pos += uint32_t(take);
    if (pos == nbits) pos = 0;
  }
  return s;
}

}  // namespace trellis
