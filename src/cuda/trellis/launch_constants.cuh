// Launch constants of the trellis CUDA kernels, each with its reason.
#pragma once

namespace trellis::cuda {

// Tensor-core forms: 8 warps per block. 256 threads with <= 128 registers
// each lets two blocks share an SM (16 warps), enough independent decode
// chains per scheduler to keep the integer pipes issuing.
inline constexpr int kMmaWarps = 8;
inline constexpr int kMmaThreads = kMmaWarps * 32;
inline constexpr int kMmaMinBlocksPerSm = 2;

// Axis-1 tensor-core form: a warp owns a 16-row tile (the MMA's M); one
// m16n8k16 consumes 16 positions per row, and a lane decodes 32-position
// runs, so 4 lanes cover half a 256-position block in 8 MMA steps.
inline constexpr int kTileRows = 16;

// Axis-0 tensor-core form: a warp covers one 256-column block of 16-row
// slabs; its lanes decode 16-position runs (see mma_axis0.cu).
inline constexpr int kSlabRows = 16;

// Split-K: aim for at least this many work units per resident warp so the
// static per-block unit ranges balance to within a few percent.
inline constexpr int kUnitsPerWarp = 2;

// Activation staging: one block per activation row.
inline constexpr int kStageThreads = 1024;

// Most activation rows the tensor-core forms take (the MMA's N = 8).
inline constexpr int kMmaMaxM = 8;

}  // namespace trellis::cuda
