// Launch constants of the trellis CUDA kernels, each with its reason.
#pragma once

namespace trellis::cuda {

// Tensor-core forms: 8 warps per block. 256 threads with <= 128 registers
// each lets two blocks share an SM (16 warps), enough independent decode
// chains per scheduler to keep the integer pipes issuing.
inline constexpr int kMmaWarps = 8;
inline constexpr int kMmaThreads = kMmaWarps * 32;
inline constexpr int kMmaMinBlocksPerSm = 2;

// One m16n8k16 MMA consumes 16 code positions per row; a lane decodes a run
// of 32 consecutive positions, so 4 lanes cover 128 columns of a 16-row tile
// in 8 MMA steps ("a chunk").
inline constexpr int kChunkCols = 128;
inline constexpr int kTileRows = 16;

// Axis-0 tensor-core form: a warp decodes 16 stored rows x 64 columns per
// slab (32 lanes, one 32-position run each) and transposes through shared
// memory; rows are padded by 8 halves so ldmatrix rows fall in distinct banks.
inline constexpr int kSlabRows = 16;
inline constexpr int kSlabCols = 64;
inline constexpr int kSlabStride = kSlabCols + 8;
// Slabs whose loads are in flight per warp: a slab is only ~160 instructions
// of decode per lane, far shorter than an HBM round trip.
inline constexpr int kAxis0Prefetch = 4;

// Split-K: aim for at least this many work units per resident warp so the
// static per-block unit ranges balance to within a few percent.
inline constexpr int kUnitsPerWarp = 2;

// Activation staging: one block per activation row.
inline constexpr int kStageThreads = 1024;

// Most activation rows the tensor-core forms take (the MMA's N = 8).
inline constexpr int kMmaMaxM = 8;

}  // namespace trellis::cuda
