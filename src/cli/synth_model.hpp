// synth_model: a trellis model directory with a real model's geometry and
// random weights, for speed measurements (speed does not depend on values).
//
// Presets (Hugging Face configs): qwen3-14b, qwen3-8b, llama3-8b, and tiny
// (a 2-layer qwen3, hidden 256, for tests). Every decoder projection is
// trellis-coded exactly as `trellis quantize` writes it (SPEC §1: U32 codes
// [rows, cols·k/32], F16 scales [rows], with --rotate I8 signs shared by
// q/k/v and by gate/up; the config's "quantization" entries through the
// quantizer's own writer): codes are uniformly random words (every bit
// stream is a valid tail-biting code), a row's scale is U(0.7, 1.3)/√in
// (weights of the usual 1/√in spread). Embeddings and the LM head are bf16
// N(0, 0.02)-like uniform values; norms are ones. With quantize_head the LM
// head is coded too (axis 1, the layers' bits, its own sign vector), as
// `trellis quantize --quantize-head` writes it. The tokenizer files come
// from models/shakespeare-qwen3-15m, whose vocabulary (4096) is smaller
// than the presets': LM head rows of ids beyond it are zero (a coded head:
// scale 0), so greedy decoding only picks ids the tokenizer can print.
//
// The directory is written into a staging directory next to `out` and
// renamed at the end (quant::StagingDir): it appears whole or not at all.
// Tensors are split into shards of at most 8 layers (model.safetensors.index.json).
// Errors (trellis::Error): an unknown preset, bits outside 2..4, L outside
// bits+1..16, an existing `out` without `replace`, a missing tokenizer source.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace trellis::cli {

struct SynthOptions {
  std::string like;
  int bits = 3;
  int L = 12;
  uint64_t seed = 0;
  bool rotate = false;
  bool quantize_head = false;
  bool replace = false;
  std::filesystem::path out;
  std::filesystem::path tokenizer_dir;  // where tokenizer.json and tokenizer_config.json come from
};

// Reports one line per written shard.
void synth_model(const SynthOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace trellis::cli
