// Launch constants of the trellis CUDA kernels, each with its reason.
#pragma once

namespace trellis::cuda {

// The tensor-core forms decode T = 256 blocks (the format's practical block).
inline constexpr int kBlockT = 256;

// Axis-0 tensor-core form: 8 warps per block, two blocks per SM (256
// threads at <= 128 registers: 8 accumulator tiles, two slabs of code words
// and a pointer per row run). Measured on the H200 (bench/results/
// h200_axis0_variants.txt): three blocks at 80 registers spill the run
// pointers and run k = 3 at 42.5 µs against 35.6.
inline constexpr int kMmaWarps = 8;
inline constexpr int kMmaThreads = kMmaWarps * 32;
inline constexpr int kMmaMinBlocksPerSm = 2;
// Columns an axis-0 warp covers: half of a T = 256 block (8 MMA tiles of 16).
inline constexpr int kAxis0WarpCols = 128;

// Axis-1 tensor-core form: one block of 20 warps per SM (20 x 32 threads at
// the 96 registers this allows the kernel without spills: 61,440 of 65,536),
// so the activations it stages in shared memory serve 20 warps; each warp
// takes an equal contiguous share of the (tile, half-block) chunk stream, and
// at least kMinChunksPerWarp chunks so small matrices do not split into more
// partial sums than work.
inline constexpr int kAxis1Warps = 20;
inline constexpr int kAxis1Threads = kAxis1Warps * 32;
inline constexpr int kMinChunksPerWarp = 4;
// Shared memory for the staged activations (M x cols halves): the form serves
// M·cols up to this; larger calls take another form.
inline constexpr int kAxis1StageBytes = 192 * 1024;

// Axis-1 integer form on warpgroup MMAs (sm_90a): 5 warpgroups (20 warps) per
// block, one block per SM — 640 threads at 96 registers, no spills at k = 4.
// Measured on the H200 (bench/results/h200_axis1_structure_experiments.txt):
// gate/up k = 2, M = 1 51.3 µs with 5 groups, 52.6 with 3, 54.9 with 4.
inline constexpr int kWgmmaGroups = 5;
inline constexpr int kWgmmaThreads = kWgmmaGroups * 128;

// Axis-1 tensor-core form: a warp owns a 16-row tile (the MMA's M); one
// m16n8k16 consumes 16 positions per row, and a lane decodes 32-position
// runs, so 4 lanes cover half a 256-position block in 8 MMA steps.
inline constexpr int kTileRows = 16;

// Axis-0 tensor-core form: a warp covers one 256-column block of 16-row
// slabs; its lanes decode 16-position runs (see mma_axis0.cu). A block stages
// its segment's activations (M x segment rows halves) in at most this much
// shared memory; the plan makes segments short enough.
inline constexpr int kSlabRows = 16;
inline constexpr int kAxis0StageBytes = 32 * 1024;

// Integer axis-0 form (imma_axis0.cu): a warp covers a whole 256-column block
// of 8-row slabs (lanes decode 32-position runs of two stored rows; 16
// accumulator tiles), the block's warps add their int32 tiles into column
// sums in shared memory with one spare entry per 32 columns (bank spread).
inline constexpr int kImmaAxis0SlabRows = 8;
inline constexpr int kImmaAxis0SumSlots = kBlockT + kBlockT / 32;

// Most activation rows the tensor-core forms take (the MMA's N = 8).
inline constexpr int kMmaMaxM = 8;
// The byte-operand (imma) forms: two operand columns per activation row.
inline constexpr int kImmaMaxM = kMmaMaxM / 2;

}  // namespace trellis::cuda
