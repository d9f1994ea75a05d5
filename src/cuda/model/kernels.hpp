// Launchers of the CUDA model kernels (src/cuda/model/*.cu), the elementwise,
// normalisation, rotation and attention work of the CUDA backend around the
// trellis kernels. Every launcher enqueues on `stream`, allocates nothing and
// is CUDA-graph capturable. Activations are row-major fp32 unless named bf16
// (raw uint16_t bits); the math of each is stated in its .cu file.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "trellis/model/top_choice.hpp"

namespace trellis::model::cuda {

// A step's first position: read from device memory at run time (`dev`, so a
// captured CUDA graph replays at a new position), or the launch-time `host`
// value when `dev` is null.
struct Pos {
  const int* dev = nullptr;
  int host = 0;
};

// convert.cu
void launch_f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream);
void launch_bf16_to_f32(const uint16_t* x, float* y, int64_t n, cudaStream_t stream);
void launch_split_bf16(const float* x, int64_t n, uint16_t* hi, uint16_t* lo, cudaStream_t stream);
void launch_add_halves(const float* a, const float* b, int64_t n, float* out, cudaStream_t stream);

// hadamard.cu (T a power of two, 2..1024; cols a multiple of T)
void launch_rotate_to_bf16(const float* x, const int8_t* signs, int64_t rows, int64_t cols, int T, uint16_t* y,
                           cudaStream_t stream);
void launch_unrotate_to_f32(const uint16_t* y, const int8_t* signs, int64_t rows, int64_t cols, int T, float* out,
                            cudaStream_t stream);

// embed.cu: the table in the checkpoint's float type
enum class TableType { bf16, f16, f32 };
void launch_embed(const void* table, TableType type, int64_t hidden, const int32_t* ids, int64_t M, float* out,
                  cudaStream_t stream);

// add_rmsnorm.cu: x += y, then out = rmsnorm(x) per group of n (the layer
// norms and the per-head QK-norm, with or without the add). y is fp32 or
// a trellis layer's bf16 output (un-rotated with y_signs), or null (x only
// read: the plain RMSNorm, out may be x); `image` receives
// out as the next trellis layer's bf16 input (rotated with image_signs).
// Rotations take whole rows (n = cols) and T dividing n.
struct AddRmsNormArgs {
  float* x = nullptr;      // [groups·n], in place
  const void* y = nullptr; // [groups·n]: fp32, or bf16 bits (y_bf16); null: none
  bool y_bf16 = false;
  const int8_t* y_signs = nullptr;  // [n]; null: y as it is
  int y_T = 0;
  const float* w = nullptr;  // [n]
  float eps = 0;
  int n = 0;
  int64_t groups = 0;
  float* out = nullptr;         // [groups·n]
  uint16_t* image = nullptr;    // [groups·n] bf16 bits; null: none
  const int8_t* image_signs = nullptr;  // [n]; null: bf16(out)
  int image_T = 0;
};
void launch_add_rmsnorm(const AddRmsNormArgs& a, cudaStream_t stream);

// qk_norm_rope.cu: per-head QK-norm (optional) and RoPE of q and k, v widened
struct QkNormRopeArgs {
  const void* q = nullptr;  // [M, heads·2·half], fp32 or bf16 bits (bf16_in)
  const void* k = nullptr;  // [M, kv_heads·2·half]
  const void* v = nullptr;  // [M, kv_heads·2·half]; null: no v
  bool bf16_in = false;
  float* q_out = nullptr;   // fp32, same shapes; may be q, k (fp32 in place)
  float* k_out = nullptr;
  float* v_out = nullptr;
  const float* q_norm = nullptr;  // [2·half] each; both null: no QK-norm
  const float* k_norm = nullptr;
  float eps = 0;
  const float* inv_freq = nullptr;  // [half]
  int half = 0;
  int64_t M = 0;
  int heads = 0, kv_heads = 0;
  Pos pos;
};
void launch_qk_norm_rope(const QkNormRopeArgs& a, cudaStream_t stream);

// rope.cu
void launch_rope(float* x, int64_t rows, int64_t cols, const float* inv_freq, int half, Pos pos, cudaStream_t stream);

// elementwise.cu
void launch_add(float* x, const float* y, int64_t n, cudaStream_t stream);
void launch_swiglu_f32(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);

// argmax.cu: answer = the index of the largest of x[0..n) as model::argmax
// gives it (first of the largest, NaN rules there); scratch: kArgmaxBlocks
// keys and a counter that starts at zero and is left at zero
constexpr int kArgmaxBlocks = 128;
struct ArgmaxScratch {
  uint64_t* block_keys = nullptr;  // [kArgmaxBlocks]
  unsigned* counter = nullptr;
};
void launch_argmax(const float* x, int64_t n, ArgmaxScratch s, int32_t* answer, cudaStream_t stream);

// top_logits.cu: keys = the `count` largest of x[0..n) as 64-bit keys,
// descending (value, then lower index; a NaN first as 2^64 − 1), where
// top_logits_serves(n, count)
constexpr int kTopLogitsMaxCount = 64, kTopLogitsBlockKeys = 4096;
struct TopLogitsScratch {
  uint64_t* block_keys = nullptr;  // [kTopLogitsBlockKeys]: each row block's first count
  uint64_t* keys = nullptr;        // [kTopLogitsMaxCount]
};
bool top_logits_serves(int64_t n, int count);
void launch_top_logit_keys(const float* x, int64_t n, int count, TopLogitsScratch s, cudaStream_t stream);

// top_choice.cu: choose_from_top (trellis/model/top_choice.hpp) on the
// first `count` of those keys with the draw at `draw`: the token (0 where
// the choice declines) to next_token, the token or kChoiceDeclined to chosen
void launch_top_choice(const uint64_t* keys, int count, const TopChoiceParams& params, const double* draw,
                       int32_t* next_token, int32_t* chosen, cudaStream_t stream);

// hold.cu: one thread that waits ns nanoseconds (the profiler's hold)
void launch_hold(uint64_t ns, cudaStream_t stream);

// attention.cu
struct AttentionArgs {
  const float* q = nullptr;  // [M, heads·d]
  const float* k = nullptr;  // [M, kv_heads·d]
  const float* v = nullptr;
  float* keys = nullptr;     // the layer's cache: [kv_heads][capacity][d]
  float* values = nullptr;
  float* out = nullptr;      // [M, heads·d]
  uint16_t* out_bf16 = nullptr;  // [M, heads·d]: bf16 bits of out as well (o's kernel input), or null
  float* partials = nullptr; // splits > 1: [M][heads][splits][d + 2]
  int M = 0, heads = 0, kv_heads = 0, d = 0, capacity = 0;
  int splits = 1;            // blocks per (kv head, row group); split s takes key tiles s, s + splits, ...
  Pos pos;
};
constexpr int kAttentionTile = 32;        // keys per shared-memory tile
constexpr int kAttentionBlocksPerSm = 4;  // the decode split count's target
constexpr int kAttentionMaxDecodeRows = 8;  // more query rows: prefill, one split
constexpr int kAttentionRowsPerBlock = 8;   // query rows (m, head) of one kv head per block
// Blocks per (split, kv head): the M·heads/kv_heads query rows of a kv head in groups of 8.
inline int64_t attention_row_groups(int64_t M, int64_t heads, int64_t kv_heads) {
  return (M * (heads / kv_heads) + kAttentionRowsPerBlock - 1) / kAttentionRowsPerBlock;
}
bool attention_supports_head_dim(int d);
void launch_attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace trellis::model::cuda
