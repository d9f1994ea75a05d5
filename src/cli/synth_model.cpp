// synth_model (contract in synth_model.hpp).
#include "synth_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../quant/quantized_config.hpp"
#include "trellis/error.hpp"
#include "trellis/format/atomic_file.hpp"
#include "trellis/format/model_dir.hpp"
#include "trellis/format/safetensors_writer.hpp"
#include "trellis/half.hpp"
#include "trellis/quant/staging_dir.hpp"

namespace trellis::cli {
namespace {

namespace fs = std::filesystem;
using format::DType;

struct Preset {
  const char* name;
  const char* model_type;
  const char* architecture;
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_positions;
  double rope_theta, rms_eps;
};

constexpr Preset kPresets[] = {
    {"qwen3-14b", "qwen3", "Qwen3ForCausalLM", 5120, 17408, 40, 40, 8, 128, 151936, 40960, 1e6, 1e-6},
    {"qwen3-8b", "qwen3", "Qwen3ForCausalLM", 4096, 12288, 36, 32, 8, 128, 151936, 40960, 1e6, 1e-6},
    {"llama3-8b", "llama", "LlamaForCausalLM", 4096, 14336, 32, 32, 8, 128, 128256, 8192, 5e5, 1e-5},
    {"tiny", "qwen3", "Qwen3ForCausalLM", 256, 512, 2, 4, 2, 64, 4096, 2048, 1e6, 1e-6},
};
constexpr int64_t kLayersPerShard = 8;
constexpr int kT = 256;

const Preset& preset(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return p;
  throw Error("synth: unknown model '" + name + "' (qwen3-14b, qwen3-8b, llama3-8b or tiny)");
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// FNV-1a of a tensor name: each tensor's random stream depends only on the seed and its name.
uint64_t stream_seed(const std::string& name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// fill(i0, i1, state) over [0, n) in chunks spread over the hardware threads;
// chunk c's state starts from (seed, c), so the result does not depend on the thread count.
template <typename F>
void parallel_fill(int64_t n, uint64_t seed, F fill) {
  constexpr int64_t kChunk = 1 << 20;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int threads = int(std::max(1u, std::min(std::thread::hardware_concurrency(), 32u)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t c = t; c < chunks; c += threads) {
        uint64_t state = seed ^ (uint64_t(c) * 0xd1342543de82ef95ull);
        fill(c * kChunk, std::min(n, (c + 1) * kChunk), state);
      }
    });
  for (auto& th : pool) th.join();
}

// Values uniform in [−a, a) with a = 0.02·√3 (standard deviation 0.02), as bf16; rows ≥ live_rows zero.
std::vector<uint16_t> random_bf16(const std::string& name, int64_t rows, int64_t cols, int64_t live_rows,
                                  uint64_t seed) {
  std::vector<uint16_t> v(size_t(rows * cols), 0);
  const int64_t live = std::min(rows, live_rows) * cols;
  const float a = 0.02f * std::sqrt(3.0f);
  parallel_fill(live, stream_seed(name, seed), [&](int64_t i0, int64_t i1, uint64_t& s) {
    for (int64_t i = i0; i < i1; ++i) {
      const float u = float(splitmix64(s) >> 40) * (1.0f / float(1 << 24));
      v[size_t(i)] = float_to_bf16((2.0f * u - 1.0f) * a);
    }
  });
  return v;
}

std::vector<uint16_t> ones_bf16(int64_t n) { return std::vector<uint16_t>(size_t(n), float_to_bf16(1.0f)); }

struct Coded {
  std::string module;
  int64_t out, in;
  int axis;
  std::string sign_group;
};

std::vector<Coded> coded_modules(const Preset& p, int64_t layer) {
  const std::string m = "model.layers." + std::to_string(layer) + ".";
  const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
  return {{m + "self_attn.q_proj", q, p.hidden, 1, m + "attn_in"},
          {m + "self_attn.k_proj", kv, p.hidden, 1, m + "attn_in"},
          {m + "self_attn.v_proj", kv, p.hidden, 1, m + "attn_in"},
          {m + "self_attn.o_proj", p.hidden, q, 1, m + "self_attn.o_proj"},
          {m + "mlp.gate_proj", p.intermediate, p.hidden, 1, m + "mlp_in"},
          {m + "mlp.up_proj", p.intermediate, p.hidden, 1, m + "mlp_in"},
          {m + "mlp.down_proj", p.hidden, p.intermediate, 0, m + "mlp.down_proj"}};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string hf_config(const Preset& p) {
  nlohmann::ordered_json c = {{"architectures", {p.architecture}},
                              {"model_type", p.model_type},
                              {"hidden_size", p.hidden},
                              {"intermediate_size", p.intermediate},
                              {"num_hidden_layers", p.layers},
                              {"num_attention_heads", p.heads},
                              {"num_key_value_heads", p.kv_heads},
                              {"head_dim", p.head_dim},
                              {"vocab_size", p.vocab},
                              {"max_position_embeddings", p.max_positions},
                              {"rms_norm_eps", p.rms_eps},
                              {"rope_theta", p.rope_theta},
                              {"hidden_act", "silu"},
                              {"attention_bias", false},
                              {"tie_word_embeddings", false},
                              {"torch_dtype", "bfloat16"},
                              {"eos_token_id", 2}};
  return c.dump(2);
}

// The owned data of one shard's tensors.
class Shard {
 public:
  template <typename T>
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<T> data) {
    auto owned = std::make_shared<std::vector<T>>(std::move(data));
    keep_.push_back(owned);
    tensors_.push_back({name, dtype, std::move(shape), std::as_bytes(std::span<const T>(*owned))});
    bytes_ += tensors_.back().data.size();
  }
  const std::vector<format::TensorToWrite>& tensors() const { return tensors_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<std::shared_ptr<void>> keep_;
  std::vector<format::TensorToWrite> tensors_;
  uint64_t bytes_ = 0;
};

// Rows ≥ live_rows get scale 0 (their outputs are zero).
void add_coded(Shard& shard, const Coded& c, int k, uint64_t seed, std::map<std::string, std::vector<int8_t>>& signs,
               bool rotate, int64_t live_rows) {
  const int64_t rows = c.axis == 1 ? c.out : c.in, cols = c.axis == 1 ? c.in : c.out;
  const int64_t words = rows * (cols * k / 32);
  std::vector<uint32_t> codes(static_cast<size_t>(words));
  parallel_fill(words, stream_seed(c.module + ".weight", seed), [&](int64_t i0, int64_t i1, uint64_t& s) {
    for (int64_t i = i0; i < i1; ++i) codes[size_t(i)] = uint32_t(splitmix64(s));
  });
  std::vector<uint16_t> scales(static_cast<size_t>(rows));
  uint64_t s = stream_seed(c.module + ".scales", seed);
  const float base = float(1.0 / std::sqrt(double(c.in)));
  for (int64_t r = 0; r < rows; ++r) {
    const float f = base * (0.7f + 0.6f * float(splitmix64(s) >> 40) / float(1 << 24));
    scales[size_t(r)] = float_to_fp16(r < live_rows ? f : 0.0f);
  }
  shard.add(c.module + ".weight", DType::U32, {rows, cols * k / 32}, std::move(codes));
  shard.add(c.module + ".scales", DType::F16, {rows}, std::move(scales));
  if (!rotate) return;
  auto& group = signs[c.sign_group];
  if (group.empty()) {
    uint64_t gs = stream_seed(c.sign_group, seed);
    group.resize(size_t(cols));
    for (int64_t i = 0; i < cols; ++i) group[size_t(i)] = (splitmix64(gs) & 1) ? int8_t(-1) : int8_t(1);
  }
  shard.add(c.module + ".signs", DType::I8, {cols}, group);
}

// One more than the largest id of tokenizer.json's vocabulary and added tokens.
int64_t tokenizer_vocab_size(const fs::path& path) {
  nlohmann::json t;
  try {
    t = nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
  int64_t n = 0;
  for (const auto& [token, id] : t.at("model").at("vocab").items()) n = std::max(n, id.get<int64_t>() + 1);
  for (const auto& a : t.value("added_tokens", nlohmann::json::array())) n = std::max(n, a.at("id").get<int64_t>() + 1);
  return n;
}

}  // namespace

void synth_model(const SynthOptions& o, const std::function<void(const std::string&)>& progress) {
  const Preset& p = preset(o.like);
  if (o.bits < 2 || o.bits > 4) throw Error("synth: --bits must be 2, 3 or 4, got " + std::to_string(o.bits));
  if (o.L <= o.bits || o.L > 16)
    throw Error("synth: --L must be in " + std::to_string(o.bits + 1) + "..16, got " + std::to_string(o.L));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    if (!fs::exists(o.tokenizer_dir / f)) throw Error("synth: " + (o.tokenizer_dir / f).string() + " is missing");
  const int64_t tokenizer_vocab = tokenizer_vocab_size(o.tokenizer_dir / "tokenizer.json");

  quant::StagingDir staging(o.out, o.replace);
  const fs::path dir = staging.path();
  quant::QuantPlan plan;
  plan.L = o.L;
  plan.T = kT;
  plan.rotate = o.rotate;
  const int64_t shards = 2 + (p.layers + kLayersPerShard - 1) / kLayersPerShard;
  std::map<std::string, std::string> weight_map;
  uint64_t total = 0;
  const auto shard_name = [&](int64_t i) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards); };
  const auto write = [&](int64_t i, const Shard& s, const std::string& what) {
    format::write_safetensors(dir / shard_name(i), s.tensors(), {{"format", "pt"}});
    for (const auto& t : s.tensors()) weight_map[t.name] = shard_name(i);
    total += s.bytes();
    progress(fmt::format("synth: shard {}/{} ({}) written, {:.2f} GB", i + 1, shards, what, double(s.bytes()) / 1e9));
  };

  {
    Shard s;
    s.add("model.embed_tokens.weight", DType::BF16, {p.vocab, p.hidden},
          random_bf16("model.embed_tokens.weight", p.vocab, p.hidden, p.vocab, o.seed));
    write(0, s, "embeddings");
  }
  std::map<std::string, std::vector<int8_t>> signs;
  // A coded module into the shard and the plan (its config entry).
  const auto code = [&](Shard& s, const Coded& c, int64_t live_rows) {
    add_coded(s, c, o.bits, o.seed, signs, o.rotate, live_rows);
    plan.coded.push_back({c.module, nullptr, c.out, c.in, o.bits, c.axis, c.sign_group});
    plan.coded_weights += c.out * c.in;
  };
  for (int64_t first = 0, i = 1; first < p.layers; first += kLayersPerShard, ++i) {
    Shard s;
    const int64_t last = std::min(p.layers, first + kLayersPerShard);
    for (int64_t l = first; l < last; ++l) {
      const std::string m = "model.layers." + std::to_string(l) + ".";
      s.add(m + "input_layernorm.weight", DType::BF16, {p.hidden}, ones_bf16(p.hidden));
      s.add(m + "post_attention_layernorm.weight", DType::BF16, {p.hidden}, ones_bf16(p.hidden));
      if (std::string(p.model_type) == "qwen3") {
        s.add(m + "self_attn.q_norm.weight", DType::BF16, {p.head_dim}, ones_bf16(p.head_dim));
        s.add(m + "self_attn.k_norm.weight", DType::BF16, {p.head_dim}, ones_bf16(p.head_dim));
      }
      for (const Coded& c : coded_modules(p, l)) code(s, c, std::numeric_limits<int64_t>::max());
    }
    write(i, s, fmt::format("layers {}..{}", first, last - 1));
  }
  {
    Shard s;
    s.add("model.norm.weight", DType::BF16, {p.hidden}, ones_bf16(p.hidden));
    if (o.quantize_head) {
      code(s, {"lm_head", p.vocab, p.hidden, 1, "lm_head"}, tokenizer_vocab);
    } else {
      s.add("lm_head.weight", DType::BF16, {p.vocab, p.hidden},
            random_bf16("lm_head.weight", p.vocab, p.hidden, tokenizer_vocab, o.seed));
    }
    write(shards - 1, s, o.quantize_head ? "final norm and coded LM head" : "final norm and LM head");
  }
  format::write_safetensors_index(dir / "model.safetensors.index.json", weight_map, total);
  std::sort(plan.coded.begin(), plan.coded.end(),
            [](const quant::CodedModule& a, const quant::CodedModule& b) { return a.module < b.module; });
  format::write_file_atomic(dir / "config.json", quant::detail::quantized_config_json(hf_config(p), "synth", plan));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    if (fs::exists(o.tokenizer_dir / f)) fs::copy_file(o.tokenizer_dir / f, dir / f);
  const format::ModelDir check(dir);
  if (check.trellis_tensors().size() != plan.coded.size())
    throw Error(o.out.string() + ": wrote " + std::to_string(plan.coded.size()) + " coded tensors but " +
                std::to_string(check.trellis_tensors().size()) + " load back");
  staging.commit();
  progress(fmt::format("synth: {} at {} bits (L={}{}{}) in {}, {:.2f} GB", p.name, o.bits, o.L,
                       o.rotate ? ", rotated" : "", o.quantize_head ? ", coded LM head" : "", o.out.string(),
                       double(total) / 1e9));
}

}  // namespace trellis::cli
