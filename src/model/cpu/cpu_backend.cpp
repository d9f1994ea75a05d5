// CpuBackend: the Backend ops (trellis/model/backend.hpp) over fp32 host
// activations. Each op checks shapes, then runs its kernel: dense_matmul or
// the trellis kernels (cpu_linear), attention, vector_ops. Weight handles
// are the cpu_linear/attention classes and the small ones below.
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cpu_linear.hpp"
#include "thread_pool.hpp"
#include "trellis/cpu/threads.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"
#include "trellis/model/cpu_backend.hpp"
#include "trellis/model/sampling.hpp"
#include "vector_ops.hpp"

namespace trellis::model {
namespace {

using cpu::CpuGateUp;
using cpu::CpuKvCache;
using cpu::CpuLinear;

// One element of a bf16/fp16/fp32 tensor as fp32.
float element(const format::TensorInfo& t, int64_t i) {
  const std::byte* p = t.data.data();
  if (t.dtype == format::DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t.dtype == format::DType::F16 ? fp16_to_float(h) : bf16_to_float(h);
}

class CpuVector final : public VectorWeight {
 public:
  explicit CpuVector(const format::TensorInfo& t) : VectorWeight(t.numel()), values(size_t(t.numel())) {
    t.require_float("a norm weight");
    for (int64_t i = 0; i < size; ++i) values[size_t(i)] = element(t, i);
  }
  explicit CpuVector(std::span<const float> v) : VectorWeight(int64_t(v.size())), values(v.begin(), v.end()) {}
  std::vector<float> values;
};

// Rows are widened from the mapped table when looked up.
class CpuEmbedding final : public EmbeddingWeight {
 public:
  explicit CpuEmbedding(const format::TensorInfo& t)
      : EmbeddingWeight(t.shape.size() == 2 ? t.shape[0] : 0, t.shape.size() == 2 ? t.shape[1] : 0), table(&t) {
    t.require_float("an embedding");
    if (t.shape.size() != 2)
      throw Error(t.source + ": tensor '" + t.name + "': an embedding must be 2-D, got " +
                  format::shape_string(t.shape));
  }
  const format::TensorInfo* table;
};

float* f32(const Act& a) { return static_cast<float*>(a.data); }

void require(bool ok, const char* op, const std::string& rule) {
  if (!ok) throw Error(std::string("cpu backend: ") + op + ": " + rule);
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : pool_(trellis::cpu::thread_count()) {}

  std::string name() const override {
    return "cpu, " + std::to_string(pool_.size()) + (pool_.size() == 1 ? " thread" : " threads");
  }

  std::unique_ptr<LinearWeight> load_linear(const LinearSource& w) override { return std::make_unique<CpuLinear>(w); }
  std::unique_ptr<GateUpWeight> load_gate_up(const LinearSource& gate, const LinearSource& up) override {
    return std::make_unique<CpuGateUp>(gate, up);
  }
  std::unique_ptr<VectorWeight> load_vector(const format::TensorInfo& w) override {
    return std::make_unique<CpuVector>(w);
  }
  std::unique_ptr<VectorWeight> load_vector(std::span<const float> values) override {
    return std::make_unique<CpuVector>(values);
  }
  std::unique_ptr<EmbeddingWeight> load_embedding(const format::TensorInfo& w) override {
    return std::make_unique<CpuEmbedding>(w);
  }

  ActBuffer alloc(int64_t rows, int64_t cols) override {
    auto storage = std::shared_ptr<float[]>(new float[size_t(rows * cols)]());
    return {storage, {storage.get(), rows, cols, int64_t(sizeof(float))}};
  }
  std::unique_ptr<KvCache> make_kv_cache(int64_t layers, int64_t kv_heads, int64_t head_dim,
                                         int64_t capacity) override {
    return std::make_unique<CpuKvCache>(layers, kv_heads, head_dim, capacity);
  }

  void embed(const EmbeddingWeight& e, std::span<const int32_t> ids, const Act& out) override {
    const auto& table = *static_cast<const CpuEmbedding&>(e).table;
    require(out.rows == int64_t(ids.size()) && out.cols == e.hidden, "embed", "output shape");
    const bool next = ids.size() == 1 && ids[0] == kNextToken;
    require(!next || next_token_, "embed", "the next token comes from an earlier argmax_to_next or choose_to_next, and there was none");
    for (size_t m = 0; m < ids.size(); ++m) {
      const int32_t id = next ? *next_token_ : ids[m];
      require(id >= 0 && id < e.vocab, "embed",
              "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(e.vocab) + ")");
      for (int64_t i = 0; i < e.hidden; ++i) f32(out)[int64_t(m) * e.hidden + i] = element(table, id * e.hidden + i);
    }
  }

  void rmsnorm(const Act& x, const VectorWeight& w, float eps, const Act& out) override {
    require(x.cols % w.size == 0 && out.rows == x.rows && out.cols == x.cols, "rmsnorm", "shapes");
    cpu::rmsnorm(f32(x), x.rows, x.cols, static_cast<const CpuVector&>(w).values, eps, f32(out));
  }

  void rope(const Act& x, const VectorWeight& inv_freq, int64_t pos0) override {
    require(inv_freq.size > 0 && x.cols % (2 * inv_freq.size) == 0, "rope", "the head size must divide the row");
    cpu::rope(f32(x), x.rows, x.cols, static_cast<const CpuVector&>(inv_freq).values, pos0);
  }

  void attention(const Act& q, const Act& k, const Act& v, KvCache& cache, int64_t layer, int64_t pos0,
                 const Act& out) override {
    const int64_t heads = attention_heads(q, k, v, cache, layer, pos0, out, "cpu");
    cpu::attention(pool_, f32(q), f32(k), f32(v), q.rows, heads, static_cast<CpuKvCache&>(cache), layer, pos0,
                   f32(out));
  }

  void linear(const LinearWeight& w, const Act& x, const Act& out) override {
    require(x.cols == w.in_features && out.cols == w.out_features && out.rows == x.rows, "linear", "shapes");
    static_cast<const CpuLinear&>(w).apply(pool_, f32(x), x.rows, f32(out));
  }

  void gate_up_swiglu(const GateUpWeight& w, const Act& x, const Act& out) override {
    require(x.cols == w.in_features && out.cols == w.out_features && out.rows == x.rows, "gate_up_swiglu", "shapes");
    static_cast<const CpuGateUp&>(w).apply(pool_, f32(x), x.rows, f32(out));
  }

  void add(const Act& x, const Act& y) override {
    require(x.rows == y.rows && x.cols == y.cols, "add", "shapes");
    cpu::add(f32(x), f32(y), x.rows * x.cols);
  }

  void to_host(const Act& x, float* dst) override {
    std::memcpy(dst, x.data, size_t(x.rows * x.cols) * sizeof(float));
  }
  int32_t argmax(const Act& x) override {
    return model::argmax(std::span(static_cast<const float*>(x.data), size_t(x.cols)));
  }
  void argmax_to_next(const Act& x) override {
    next_token_ = argmax(x);
    queued_.push_back(*next_token_);
  }
  void choose_to_next(const Act& x, int count, const TopChoiceParams& params, double u) override {
    const int32_t t = choose_from_top(top_logits(x, count), params, u);
    next_token_ = t == kDeclined ? 0 : t;
    queued_.push_back(t);
  }
  int32_t take_token() override {
    require(!queued_.empty(), "take_token", "no token is queued (argmax_to_next or choose_to_next queues one)");
    const int32_t t = queued_.front();
    queued_.pop_front();
    return t;
  }

 private:
  std::optional<int32_t> next_token_;  // the last argmax_to_next's or choose_to_next's token
  std::deque<int32_t> queued_;         // their tokens not yet taken
  cpu::ThreadPool pool_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace trellis::model
