// quantize_model (contract in include/trellis/quant/quantize_model.hpp).
#include "trellis/quant/quantize_model.hpp"

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "block_encoders.hpp"
#include "quantized_config.hpp"
#include "trellis/codec/quantize_tensor.hpp"
#include "trellis/error.hpp"
#include "trellis/format/atomic_file.hpp"
#include "trellis/format/safetensors_writer.hpp"
#include "trellis/half.hpp"

namespace trellis::quant {
namespace {

namespace fs = std::filesystem;
using format::DType;
using Clock = std::chrono::steady_clock;

constexpr const char* kCopiedFiles[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                        "special_tokens_map.json", "chat_template.jinja"};

// The tensor as fp32 (bf16, fp16 or fp32 in the file; unaligned data is fine).
std::vector<float> to_f32(const format::TensorInfo& t, double& sq_norm) {
  const std::byte* p = t.data.data();
  std::vector<float> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == DType::F32) {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t.dtype == DType::BF16 ? bf16_to_float(h) : fp16_to_float(h);
    }
  }
  sq_norm = 0.0;
  for (float x : out) sq_norm += double(x) * double(x);
  return out;
}

// FNV-1a: a seed per sign group that is the same on every platform.
uint64_t group_seed(const std::string& group, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : group) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

}  // namespace

void require_encoder(const RunOptions& options) { detail::require_encoder(options.cuda); }

QuantReport quantize_model(const format::ModelDir& in, const QuantPlan& plan, const fs::path& out,
                           const RunOptions& options, const QuantizeCallbacks& callbacks) {
  const auto start = Clock::now();
  require_encoder(options);
  detail::BlockEncoders encoders(options.cuda);
  QuantReport report;
  report.L = plan.L;
  report.T = plan.T;
  report.rotate = plan.rotate;
  report.threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  std::vector<QuantizedTensor> coded;
  coded.reserve(plan.coded.size());
  for (const CodedModule& m : plan.coded) {
    const auto t0 = Clock::now();
    TensorReport r;
    r.module = m.module;
    r.k = m.k;
    r.axis = m.axis;
    r.out_features = m.out_features;
    r.in_features = m.in_features;
    const std::vector<float> w = to_f32(*m.weight, r.sq_norm);
    QuantizeOptions qo;
    qo.k = m.k;
    qo.L = plan.L;
    qo.T = plan.T;
    qo.axis = m.axis;
    qo.rotate = plan.rotate;
    qo.seed = group_seed(m.sign_group, options.seed);
    qo.threads = report.threads;
    qo.encoder = encoders.get(qo.k, qo.L, qo.T, qo.max_overlaps);
    if (callbacks.on_rows) qo.progress = [&](int64_t done, int64_t total) { callbacks.on_rows(m, done, total); };
    try {
      coded.push_back(quantize_tensor(w.data(), m.out_features, m.in_features, qo));
    } catch (const Error& e) {
      throw Error(m.weight->source + ": tensor '" + m.weight->name + "': " + e.what());
    }
    const QuantizedTensor& q = coded.back();
    r.rel_error = q.rel_error;
    r.bytes = 4 * q.codes.size() + 2 * q.scales.size() + q.signs.size();
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report.tensors.push_back(r);
    if (callbacks.on_tensor) callbacks.on_tensor(report.tensors.back());
  }

  std::vector<format::TensorToWrite> tensors;
  for (size_t i = 0; i < plan.coded.size(); ++i) {
    const std::string& m = plan.coded[i].module;
    const QuantizedTensor& q = coded[i];
    tensors.push_back({m + ".weight", DType::U32, {q.geom.rows, q.geom.words_per_row()}, bytes(q.codes)});
    tensors.push_back({m + ".scales", DType::F16, {q.geom.rows}, bytes(q.scales)});
    if (!q.signs.empty()) tensors.push_back({m + ".signs", DType::I8, {q.geom.cols}, bytes(q.signs)});
  }
  for (const format::TensorInfo* t : plan.copied) tensors.push_back({t->name, t->dtype, t->shape, t->data});
  format::write_safetensors(out / "model.safetensors", tensors, {{"format", "pt"}});

  const fs::path config = in.path() / "config.json";
  format::write_file_atomic(out / "config.json",
                            detail::quantized_config_json(read_text(config), config.string(), plan));
  for (const char* name : kCopiedFiles)
    if (fs::exists(in.path() / name)) fs::copy_file(in.path() / name, out / name);

  const format::ModelDir check(out);
  if (check.trellis_tensors().size() != plan.coded.size())
    throw Error(out.string() + ": wrote " + std::to_string(plan.coded.size()) + " coded tensors but " +
                std::to_string(check.trellis_tensors().size()) + " load back");
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  format::write_file_atomic(out / "quant_report.json", report.json());
  return report;
}

}  // namespace trellis::quant
