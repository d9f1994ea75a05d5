// CudaBackend: the Backend ops (trellis/model/backend.hpp) on one GPU
// (contract in trellis/model/cuda_backend.hpp). Each op checks shapes on the
// host, then either launches its kernels on the backend's stream or, inside
// a one-token step, hands them to StepGraphs with a signature of everything
// they depend on (step_graphs.hpp). Weight handles are CudaLinear/CudaGateUp
// (cuda_linear.hpp) and the small classes below. With Options.profile every
// op's launches run inside OpProfiler spans (profiler.hpp) and graphs are off.
// The residual norms (add_rmsnorm and the ops that end in one) read a trellis
// layer's bf16 output as it is and write their output a second time as the
// bf16 input of the layer that reads it next (NormImage below), so no
// conversion kernel runs between a projection, the norm and the next one.
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_linear.hpp"
#include "kernels.hpp"
#include "launch_check.hpp"
#include "profiler.hpp"
#include "step_graphs.hpp"
#include "top_logit_key.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"
#include "trellis/model/cuda_backend.hpp"
#include "trellis/model/sampling.hpp"
#include "trellis/model/weights.hpp"

namespace trellis::model {
namespace {

using namespace cuda;
using detail::check_cuda;

constexpr std::size_t kCublasWorkspace = 32u << 20;

uint64_t word(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
uint64_t word(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void require(bool ok, const char* op, const std::string& rule) {
  if (!ok) throw Error(std::string("cuda backend: ") + op + ": " + rule);
}

class CudaVector final : public VectorWeight {
 public:
  explicit CudaVector(std::span<const float> v)
      : VectorWeight(int64_t(v.size())), values(v.data(), v.size() * sizeof(float)) {}
  DeviceBuffer values;
  const float* get() const { return values.get<float>(); }
};

class CudaEmbedding final : public EmbeddingWeight {
 public:
  explicit CudaEmbedding(const format::TensorInfo& t)
      : EmbeddingWeight(t.shape.size() == 2 ? t.shape[0] : 0, t.shape.size() == 2 ? t.shape[1] : 0) {
    t.require_float("an embedding");
    if (t.shape.size() != 2)
      throw Error(t.source + ": tensor '" + t.name + "': an embedding must be 2-D, got " +
                  format::shape_string(t.shape));
    using format::DType;
    type = t.dtype == DType::BF16 ? TableType::bf16 : t.dtype == DType::F16 ? TableType::f16 : TableType::f32;
    table = DeviceBuffer(t.data.data(), t.data.size());
  }
  TableType type;
  DeviceBuffer table;
};

class CudaKvCache final : public KvCache {
 public:
  CudaKvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity)
      : KvCache(layers, kv_heads, head_dim, capacity),
        keys_(size_t(layers * kv_heads * capacity * head_dim) * sizeof(float)),
        values_(size_t(layers * kv_heads * capacity * head_dim) * sizeof(float)) {}
  float* keys(int64_t layer) const { return keys_.get<float>() + layer * kv_heads * capacity * head_dim; }
  float* values(int64_t layer) const { return values_.get<float>() + layer * kv_heads * capacity * head_dim; }

 private:
  DeviceBuffer keys_, values_;
};

float* f32(const Act& a) { return static_cast<float*>(a.data); }

// The backend's stream (non-blocking: capturable), owned.
class Stream {
 public:
  Stream() { check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Greedy sampling's device state: the argmax kernel's scratch (its block
// keys and arrival counter, zeroed once; the kernel leaves the counter at
// zero) and its answer, which comes back through pinned memory.
class ArgmaxState {
 public:
  ArgmaxState() : device_(kArgmaxBlocks * sizeof(uint64_t) + 2 * sizeof(uint32_t)) {
    check_cuda(cudaMemset(device_.get(), 0, device_.bytes()), "cudaMemset (argmax scratch)");
    check_cuda(cudaMallocHost(&host_, sizeof(int32_t)), "cudaMallocHost (argmax answer)");
  }
  ~ArgmaxState() { cudaFreeHost(host_); }
  ArgmaxState(const ArgmaxState&) = delete;
  ArgmaxState& operator=(const ArgmaxState&) = delete;
  ArgmaxScratch scratch() const { return {device_.get<uint64_t>(), counter()}; }
  int32_t* answer() const { return reinterpret_cast<int32_t*>(counter() + 1); }
  int32_t* host() const { return host_; }

 private:
  unsigned* counter() const { return reinterpret_cast<unsigned*>(device_.get<uint64_t>() + kArgmaxBlocks); }
  DeviceBuffer device_;
  int32_t* host_ = nullptr;
};

// Top-k sampling's device state: top_logits.cu's scratch and keys (which
// come back through pinned memory for top_logits), then the choice kernel's
// answer (top_choice.cu).
class TopLogitsState {
 public:
  TopLogitsState() : device_((kTopLogitsBlockKeys + kTopLogitsMaxCount + 1) * sizeof(uint64_t)) {
    check_cuda(cudaMallocHost(&host_, kTopLogitsMaxCount * sizeof(uint64_t)), "cudaMallocHost (top logits)");
  }
  ~TopLogitsState() { cudaFreeHost(host_); }
  TopLogitsState(const TopLogitsState&) = delete;
  TopLogitsState& operator=(const TopLogitsState&) = delete;
  TopLogitsScratch scratch() const {
    return {device_.get<uint64_t>(), device_.get<uint64_t>() + kTopLogitsBlockKeys};
  }
  int32_t* chosen() const { return reinterpret_cast<int32_t*>(scratch().keys + kTopLogitsMaxCount); }
  uint64_t* host() const { return host_; }

 private:
  DeviceBuffer device_;
  uint64_t* host_ = nullptr;
};

static_assert(Sampler::kMaxTopK + Sampler::kTopMargin <= kTopLogitsMaxCount,
              "every count the sampler asks for is one top_logits.cu serves");

// Pipelined decoding's tokens on their way to the host: per slot a pinned
// token and the event after it is written; slots are used in turn, at most
// kSlots − 1 of them (and of the steps' parameter slots) waiting at once.
// A choose_to_next slot also has a pinned draw (uploaded for a choice
// outside a recorded step) and a pinned token to upload (for a choice made
// on the host).
class TokenQueue {
 public:
  static constexpr int kSlots = StepGraphs::kParamSlots;
  struct Slot {
    int32_t* host;  // what take_token() returns
    cudaEvent_t ready;
    double* draw;
    int32_t* upload;
  };
  TokenQueue() {
    check_cuda(cudaMallocHost(&pinned_, kSlots * sizeof(Pinned)), "cudaMallocHost (token queue)");
    for (cudaEvent_t& e : ready_) check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (token queue)");
  }
  ~TokenQueue() {
    for (cudaEvent_t e : ready_) cudaEventDestroy(e);
    cudaFreeHost(pinned_);
  }
  TokenQueue(const TokenQueue&) = delete;
  TokenQueue& operator=(const TokenQueue&) = delete;
  bool full() const { return int(queued_.size()) == kSlots - 1; }
  bool empty() const { return queued_.empty(); }
  // The next slot, queued.
  Slot push(bool step) {
    const int s = next_;
    next_ = (next_ + 1) % kSlots;
    queued_.push_back({s, step});
    return {&pinned_[s].token, ready_[s], &pinned_[s].draw, &pinned_[s].upload};
  }
  struct Taken {
    int32_t* host;
    cudaEvent_t ready;
    bool step;  // the token of a one-token step (its wait counts in the step stats)
  };
  Taken pop() {
    const auto [s, step] = queued_.front();
    queued_.pop_front();
    return {&pinned_[s].token, ready_[s], step};
  }

 private:
  struct Pinned {
    double draw;
    int32_t token, upload;
  };
  Pinned* pinned_ = nullptr;  // [kSlots]
  cudaEvent_t ready_[kSlots] = {};
  std::deque<std::pair<int, bool>> queued_;
  int next_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options)
      : options_(options),
        ctx_(stream_.get()),
        scratch_(stream_.get()),
        steps_(stream_.get(), options.graphs && !options.profile) {
    if (options.profile) profiler_ = std::make_unique<OpProfiler>(stream_.get());
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    gpu_ = prop.name;
    workspace_ = DeviceBuffer(kCublasWorkspace);
    const auto handle = static_cast<cublasHandle_t>(ctx_.cublas());
    if (cublasSetWorkspace(handle, workspace_.get(), kCublasWorkspace) != CUBLAS_STATUS_SUCCESS)
      throw Error("cuda backend: cublasSetWorkspace failed");
  }

  ~CudaBackend() override { cudaStreamSynchronize(stream_.get()); }

  std::string name() const override {
    return "cuda, " + gpu_ + (steps_.enabled() ? ", CUDA graphs" : ", no CUDA graphs") +
           (profiler_ ? ", profiling" : "");
  }

  std::unique_ptr<LinearWeight> load_linear(const LinearSource& w) override {
    flush();
    return std::make_unique<CudaLinear>(w, signs_);
  }
  std::unique_ptr<GateUpWeight> load_gate_up(const LinearSource& gate, const LinearSource& up) override {
    flush();
    return std::make_unique<CudaGateUp>(gate, up, signs_);
  }
  std::unique_ptr<VectorWeight> load_vector(const format::TensorInfo& w) override {
    flush();
    const std::vector<float> v = w.to_f32("a norm weight");
    return std::make_unique<CudaVector>(v);
  }
  std::unique_ptr<VectorWeight> load_vector(std::span<const float> values) override {
    flush();
    return std::make_unique<CudaVector>(values);
  }
  std::unique_ptr<EmbeddingWeight> load_embedding(const format::TensorInfo& w) override {
    flush();
    return std::make_unique<CudaEmbedding>(w);
  }

  ActBuffer alloc(int64_t rows, int64_t cols) override {
    flush();
    void* p = nullptr;
    const size_t bytes = size_t(rows * cols) * sizeof(float);
    check_cuda(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc (activations)");
    check_cuda(cudaMemset(p, 0, bytes), "cudaMemset (activations)");
    std::shared_ptr<void> storage(p, [](void* q) { cudaFree(q); });
    return {storage, {p, rows, cols, int64_t(sizeof(float))}};
  }
  std::unique_ptr<KvCache> make_kv_cache(int64_t layers, int64_t kv_heads, int64_t head_dim,
                                         int64_t capacity) override {
    flush();
    require(attention_supports_head_dim(int(head_dim)), "kv cache",
            "head_dim " + std::to_string(head_dim) + " is not supported (64, 128 or 256)");
    return std::make_unique<CudaKvCache>(layers, kv_heads, head_dim, capacity);
  }

  void embed(const EmbeddingWeight& e, std::span<const int32_t> ids, const Act& out) override {
    require(out.rows == int64_t(ids.size()) && out.cols == e.hidden && out.elem_bytes == 4, "embed", "output shape");
    // kNextToken: the token the last argmax_to_next left in steps_.device_token().
    const bool next = ids.size() == 1 && ids[0] == kNextToken;
    require(!next || next_token_written_, "embed", "the next token comes from an earlier argmax_to_next or choose_to_next, and there was none");
    for (const int32_t id : ids)
      require(next || (id >= 0 && id < e.vocab), "embed",
              "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(e.vocab) + ")");
    const auto& table = static_cast<const CudaEmbedding&>(e);
    const int64_t hidden = e.hidden;
    settle_norm();
    image_ = {};
    flush();
    if (ids.size() == 1 && steps_.enabled()) {
      steps_.begin(ids[0]);
      const int32_t* token = steps_.device_token();
      steps_.add({1, word(&table), word(out.data)},
                 [=, this, &table] { launch_embed(table.table.get(), table.type, hidden, token, 1, f32(out), stream_.get()); });
      return;
    }
    const int32_t* d_ids = steps_.device_token();
    if (!next) {
      int32_t* uploaded = scratch_.get<int32_t>(Slot::ids, ids.size());
      check_cuda(cudaMemcpyAsync(uploaded, ids.data(), ids.size_bytes(), cudaMemcpyHostToDevice, stream_.get()),
                 "cudaMemcpyAsync (token ids)");
      d_ids = uploaded;
    }
    if (profiler_) profiler_->begin_forward(int64_t(ids.size()));
    timed(profiler_.get(), "embed", "embed",
          [&] { launch_embed(table.table.get(), table.type, hidden, d_ids, out.rows, f32(out), stream_.get()); });
  }

  void rmsnorm(const Act& x, const VectorWeight& w, float eps, const Act& out) override {
    require(x.cols % w.size == 0 && out.rows == x.rows && out.cols == x.cols, "rmsnorm", "shapes");
    const auto image = image_for(w, x);  // a layer norm whose reader takes the image
    submit(x.rows, with_image({2, word(x.data), uint64_t(x.rows), uint64_t(x.cols), word(&w), word(eps),
                               word(out.data)}, image),
           -1, [=, this, &w](Pos) { launch_residual_norm(x, ResidualY{}, w, eps, out, image); });
    publish(out, image);
  }

  void rope(const Act& x, const VectorWeight& inv_freq, int64_t pos0) override {
    require(inv_freq.size > 0 && x.cols % (2 * inv_freq.size) == 0, "rope", "the head size must divide the row");
    const float* f = static_cast<const CudaVector&>(inv_freq).get();
    const int half = int(inv_freq.size);
    submit(x.rows, {3, word(x.data), uint64_t(x.rows), uint64_t(x.cols), word(f)}, pos0,
           [=, this](Pos p) {
             timed(profiler_.get(), "rope", "rope",
                   [&] { launch_rope(f32(x), x.rows, x.cols, f, half, p, stream_.get()); });
           });
  }

  void attention(const Act& q, const Act& k, const Act& v, KvCache& cache, int64_t layer, int64_t pos0,
                 const Act& out) override {
    const int64_t heads = attention_heads(q, k, v, cache, layer, pos0, out, "cuda");
    const auto& c = static_cast<const CudaKvCache&>(cache);
    AttentionArgs a;
    a.q = f32(q);
    a.k = f32(k);
    a.v = f32(v);
    a.keys = c.keys(layer);
    a.values = c.values(layer);
    a.out = f32(out);
    a.M = int(q.rows);
    a.heads = int(heads);
    a.kv_heads = int(cache.kv_heads);
    a.d = int(cache.head_dim);
    a.capacity = int(cache.capacity);
    a.splits = attention_splits(q.rows, heads, cache.kv_heads, cache.capacity);
    const size_t partial_floats = size_t(q.rows * heads * a.splits * (a.d + 2));
    const bool image = size_t(layer) < attention_images_.size() && attention_images_[size_t(layer)];
    submit(q.rows,
           {4, word(a.q), word(a.k), word(a.v), word(a.keys), word(a.out), uint64_t(a.M), uint64_t(a.heads),
            uint64_t(a.kv_heads), uint64_t(a.d), uint64_t(a.capacity), uint64_t(a.splits), uint64_t(image)},
           pos0, [=, this](Pos p) {
             AttentionArgs run = a;
             run.pos = p;
             if (run.splits > 1) run.partials = scratch_.get<float>(Slot::attention, partial_floats);
             if (image) run.out_bf16 = scratch_.get<uint16_t>(Slot::norm_bf16, size_t(out.rows * out.cols));
             timed(profiler_.get(), "attention",
                   std::string(run.M > kAttentionMaxDecodeRows ? "prefill tiles" : "decode splits") +
                       (image ? ", bf16 image" : ""),
                   [&] { launch_attention(run, stream_.get()); });
           });
    if (image) publish(out, InputTransform{});
  }

  void linear(const LinearWeight& w, const Act& x, const Act& out) override {
    require(x.cols == w.in_features && out.cols == w.out_features && out.rows == x.rows, "linear", "shapes");
    const auto& l = static_cast<const CudaLinear&>(w);
    submit(x.rows, {5, word(&l), word(x.data), uint64_t(x.rows), word(out.data)}, -1,
           [=, this, &l](Pos) { l.apply(linear_run(), f32(x), x.rows, f32(out)); });
  }

  void gate_up_swiglu(const GateUpWeight& w, const Act& x, const Act& out) override {
    require(x.cols == w.in_features && out.cols == w.out_features && out.rows == x.rows, "gate_up_swiglu", "shapes");
    const auto& g = static_cast<const CudaGateUp&>(w);
    submit(x.rows, {6, word(&g), word(x.data), uint64_t(x.rows), word(out.data)}, -1,
           [=, this, &g](Pos) { g.apply(linear_run(), f32(x), x.rows, f32(out)); });
  }

  void add(const Act& x, const Act& y) override {
    require(x.rows == y.rows && x.cols == y.cols, "add", "shapes");
    const int64_t n = x.rows * x.cols;
    submit(x.rows, {7, word(x.data), word(y.data), uint64_t(n)}, -1,
           [=, this](Pos) {
             timed(profiler_.get(), "add", "add", [&] { launch_add(f32(x), f32(y), n, stream_.get()); });
           });
  }

  void qkv_rope(const LinearWeight& wq, const LinearWeight& wk, const LinearWeight& wv, const Act& x,
                const VectorWeight* q_norm, const VectorWeight* k_norm, float eps, const VectorWeight& inv_freq,
                int64_t pos0, const Act& q, const Act& k, const Act& v) override {
    require(!q_norm == !k_norm, "qkv_rope", "give both QK-norm weights or neither");
    for (const auto& [w, out] : {std::pair{&wq, &q}, std::pair{&wk, &k}, std::pair{&wv, &v}})
      require(x.cols == w->in_features && out->cols == w->out_features && out->rows == x.rows, "qkv_rope", "shapes");
    const int64_t d = 2 * inv_freq.size;
    // The fused kernel takes whole heads of d, a norm of one head's size
    // and v as wide as k; anything else is the composition.
    const bool heads = inv_freq.size > 0 && q.cols % d == 0 && k.cols % d == 0 && v.cols == k.cols &&
                       (!q_norm || (q_norm->size == d && k_norm->size == d));
    if (!heads) return Backend::qkv_rope(wq, wk, wv, x, q_norm, k_norm, eps, inv_freq, pos0, q, k, v);

    QkNormRopeArgs a;
    a.q_norm = q_norm ? static_cast<const CudaVector*>(q_norm)->get() : nullptr;
    a.k_norm = k_norm ? static_cast<const CudaVector*>(k_norm)->get() : nullptr;
    a.eps = eps;
    a.inv_freq = static_cast<const CudaVector&>(inv_freq).get();
    a.half = int(inv_freq.size);
    a.M = x.rows;
    a.heads = int(q.cols / d);
    a.kv_heads = int(k.cols / d);
    a.q_out = f32(q);
    a.k_out = f32(k);
    const auto &lq = static_cast<const CudaLinear&>(wq), &lk = static_cast<const CudaLinear&>(wk),
               &lv = static_cast<const CudaLinear&>(wv);
    std::vector<uint64_t> signature = {8,          word(&lq),   word(&lk),      word(&lv),    word(x.data),
                                             uint64_t(x.rows), word(a.q_norm), word(a.k_norm), word(eps),
                                             word(a.inv_freq), word(q.data),   word(k.data),   word(v.data)};
    // Fast: the three share one bf16 input, and their bf16 outputs go to the
    // kernel as they are (no output rotation).
    const bool fast = lq.shares_input(lk) && lq.shares_input(lv) && !lq.rotates_output() && !lk.rotates_output() &&
                      !lv.rotates_output();
    if (fast) {
      const TakenImage taken = take_image(x, lq, qkv_take_norm_scale(lq, lk, lv, x.rows));
      signature.insert(signature.end(), {uint64_t(taken.from), uint64_t(taken.fused.partials)});
      submit(x.rows, signature, pos0, [=, this, &lq, &lk, &lv](Pos p) {
        const LinearRun run = linear_run();
        const int64_t M = x.rows;
        uint16_t* xb = input_bf16(taken, M * x.cols);
        uint16_t* qb = scratch_.get<uint16_t>(Slot::qkv_bf16, size_t(M * (q.cols + k.cols + v.cols)));
        uint16_t* kb = qb + M * q.cols;
        uint16_t* vb = kb + M * k.cols;
        if (!taken.from) lq.kernel_input(run, f32(x), M, xb);
        const CudaLinear* layers[] = {&lq, &lk, &lv};
        uint16_t* outputs[] = {qb, kb, vb};
        CudaLinear::kernel_group(run, layers, xb, M, outputs, norm_scale(taken));
        QkNormRopeArgs in = a;
        in.q = qb;
        in.k = kb;
        in.v = vb;
        in.bf16_in = true;
        in.v_out = f32(v);
        in.pos = p;
        timed(profiler_.get(), "qk_norm_rope", "qk_norm+rope, v to_f32",
              [&] { launch_qk_norm_rope(in, stream_.get()); });
      });
      return;
    }
    linear(wq, x, q);
    linear(wk, x, k);
    linear(wv, x, v);
    std::vector<uint64_t> norm_signature = signature;
    norm_signature[0] = 9;
    submit(x.rows, norm_signature, pos0, [=, this](Pos p) {
      QkNormRopeArgs in = a;
      in.q = f32(q);
      in.k = f32(k);
      in.pos = p;
      timed(profiler_.get(), "qk_norm_rope", "qk_norm+rope", [&] { launch_qk_norm_rope(in, stream_.get()); });
    });
  }

  void add_rmsnorm(const Act& x, const Act& y, const VectorWeight& w, float eps, const Act& out) override {
    require(x.rows == y.rows && x.cols == y.cols && out.rows == x.rows && out.cols == x.cols && x.cols % w.size == 0,
            "add_rmsnorm", "shapes");
    require(out.data != x.data && out.data != y.data, "add_rmsnorm", "the output must not be x or y");
    const auto image = image_for(w, x);
    submit(x.rows, with_image({10, word(x.data), word(y.data), uint64_t(x.rows), uint64_t(x.cols), word(&w), word(eps),
                               word(out.data)}, image),
           -1, [=, this, &w](Pos) { launch_residual_norm(x, ResidualY{y.data, false, {}}, w, eps, out, image); });
    publish(out, image);
  }

  void mlp(const GateUpWeight& gate_up, const LinearWeight& down, const Act& x, const Act& mid,
           const Act& out) override {
    require(x.cols == gate_up.in_features && mid.cols == gate_up.out_features && down.in_features == mid.cols &&
                out.cols == down.out_features && mid.rows == x.rows && out.rows == x.rows,
            "mlp", "shapes");
    const auto& g = static_cast<const CudaGateUp&>(gate_up);
    const auto& d = static_cast<const CudaLinear&>(down);
    if (!mlp_fuses(g, d)) return Backend::mlp(gate_up, down, x, mid, out);
    const TakenImage in = take_image(x, g.gate(), g.takes_norm_scale(options_.trellis, x.rows));
    submit(x.rows, {11, word(&g), word(&d), word(x.data), uint64_t(x.rows), word(out.data), in.from,
                    uint64_t(in.fused.partials)},
           -1, [=, this, &g, &d](Pos) {
             const uint16_t* yb = mlp_kernels(g, d, x, mid.cols, in, nullptr);
             d.kernel_output(linear_run(), yb, x.rows, f32(out));
           });
  }

  void linear_add_rmsnorm(const LinearWeight& w, const Act& a, const Act& proj, const Act& x,
                          const VectorWeight& norm, float eps, const Act& out) override {
    const auto& l = static_cast<const CudaLinear&>(w);
    if (!l.is_trellis() || norm.size != x.cols) return Backend::linear_add_rmsnorm(w, a, proj, x, norm, eps, out);
    require(a.cols == w.in_features && x.cols == w.out_features && a.rows == x.rows && out.rows == x.rows &&
                out.cols == x.cols,
            "linear_add_rmsnorm", "shapes");
    require(out.data != x.data && out.data != a.data, "linear_add_rmsnorm", "the output must not be x or a");
    const TakenImage in = take_image(a, l, false);  // attention's bf16 image of a
    const auto image = image_for(norm, x);
    const int partials = fused_norm_partials(l, norm, x);
    submit(x.rows, with_image({12, word(&l), word(a.data), uint64_t(x.rows), word(x.data), word(&norm), word(eps),
                               word(out.data), in.from, uint64_t(partials)}, image),
           -1, [=, this, &l, &norm](Pos) {
             const LinearRun run = linear_run();
             const int64_t M = x.rows;
             uint16_t* ab = input_bf16(in, M * a.cols);
             if (!in.from) l.kernel_input(run, f32(a), M, ab);
             if (partials) return l.kernel_residual_norm(run, ab, M, residual_write(x, norm, partials));
             uint16_t* yb = scratch_.get<uint16_t>(Slot::y_bf16, size_t(M * x.cols));
             l.kernel(run, ab, M, yb);
             launch_residual_norm(x, layer_output(l, yb), norm, eps, out, image);
           });
    publish(out, image, {&norm, x, out, eps, partials});
  }

  void mlp_add_rmsnorm(const GateUpWeight& gate_up, const LinearWeight& down, const Act& h, const Act& mid,
                       const Act& proj, const Act& x, const VectorWeight& norm, float eps, const Act& out) override {
    const auto& g = static_cast<const CudaGateUp&>(gate_up);
    const auto& d = static_cast<const CudaLinear&>(down);
    if (!mlp_fuses(g, d) || norm.size != x.cols)
      return Backend::mlp_add_rmsnorm(gate_up, down, h, mid, proj, x, norm, eps, out);
    require(h.cols == gate_up.in_features && mid.cols == gate_up.out_features && down.in_features == mid.cols &&
                x.cols == down.out_features && mid.rows == h.rows && x.rows == h.rows && out.rows == x.rows &&
                out.cols == x.cols,
            "mlp_add_rmsnorm", "shapes");
    require(out.data != x.data, "mlp_add_rmsnorm", "the output must not be x");
    const TakenImage in = take_image(h, g.gate(), g.takes_norm_scale(options_.trellis, h.rows));
    const auto image = image_for(norm, x);
    const int partials = fused_norm_partials(d, norm, x);
    submit(x.rows, with_image({13, word(&g), word(&d), word(h.data), uint64_t(x.rows), word(x.data), word(&norm),
                               word(eps), word(out.data), in.from, uint64_t(in.fused.partials),
                               uint64_t(partials)}, image),
           -1, [=, this, &g, &d, &norm](Pos) {
             if (partials) {
               const trellis::cuda::ResidualNormWrite r = residual_write(x, norm, partials);
               mlp_kernels(g, d, h, mid.cols, in, &r);
               return;
             }
             const uint16_t* yb = mlp_kernels(g, d, h, mid.cols, in, nullptr);
             launch_residual_norm(x, layer_output(d, yb), norm, eps, out, image);
           });
    publish(out, image, {&norm, x, out, eps, partials});
  }

  void reserve(const ModelWeights& weights, const KvCache& cache, int64_t max_rows) override {
    flush();
    const auto& trellis = options_.trellis;
    const auto rows = size_t(max_rows);
    const auto linear = [](const std::unique_ptr<LinearWeight>& w) -> const CudaLinear& {
      return static_cast<const CudaLinear&>(*w);
    };
    ScratchNeed need;
    for (const LayerWeights& l : weights.layers) {
      for (const auto* w : {&l.q, &l.k, &l.v, &l.o, &l.down}) need.merge(linear(*w).scratch_need(max_rows, trellis));
      need.merge(static_cast<const CudaGateUp&>(*l.gate_up).scratch_need(max_rows, trellis));
      need.slot(Slot::qkv_bf16, rows * size_t(l.q->out_features + l.k->out_features + l.v->out_features) * 2);
      need.slot(Slot::mlp_bf16, rows * size_t(l.gate_up->out_features) * 2);
    }
    need.merge(linear(weights.lm_head).scratch_need(max_rows, trellis));
    need.slot(Slot::ids, rows * sizeof(int32_t));
    norm_readers_.clear();
    attention_images_.clear();
    size_t norm_partials = 0;  // the most any fused producer writes
    for (const LayerWeights& l : weights.layers) {
      const CudaLinear &q = linear(l.q), &k = linear(l.k), &v = linear(l.v), &o = linear(l.o);
      if (q.is_trellis() && q.shares_input(k) && q.shares_input(v)) {
        norm_readers_[l.input_norm.get()] = {input_transform(q), qkv_take_norm_scale(q, k, v, 1)};
      }
      const auto& g = static_cast<const CudaGateUp&>(*l.gate_up);
      if (g.fused())
        norm_readers_[l.post_attention_norm.get()] = {input_transform(g.gate()), g.takes_norm_scale(trellis, 1)};
      for (const CudaLinear* p : {&o, &linear(l.down)})
        if (p->writes_residual_norm(trellis, 1))
          norm_partials = std::max(norm_partials, size_t(p->residual_norm_partials(trellis, ctx_.sm_count())));
      // o reads attention's bf16 image when linear_add_rmsnorm fuses it and o takes x as it is.
      attention_images_.push_back(o.is_trellis() && !o.rotates_input() &&
                                  l.post_attention_norm->size == o.out_features);
      need.slot(Slot::norm_bf16, rows * size_t(std::max(l.q->in_features, l.o->in_features)) * 2);
      if (options_.fuse_norms && norm_partials) need.slot(Slot::residual_image, size_t(l.o->out_features) * 2);
    }
    if (options_.fuse_norms) need.slot(Slot::norm_partials, norm_partials * sizeof(double));
    if (!weights.layers.empty()) {
      const int64_t heads = weights.layers.front().q->out_features / cache.head_dim;
      const int64_t decode_rows = std::min<int64_t>(max_rows, kAttentionMaxDecodeRows);
      size_t partial_floats = 0;  // the split count falls as the rows grow: the most over 1..decode_rows
      for (int64_t M = 1; M <= decode_rows; ++M)
        partial_floats = std::max(partial_floats, size_t(M * heads * attention_splits(M, heads, cache.kv_heads,
                                                                                      cache.capacity) *
                                                         (cache.head_dim + 2)));
      need.slot(Slot::attention, partial_floats * sizeof(float));
    }
    for (size_t i = 0; i < need.slot_bytes.size(); ++i) scratch_.reserve(Slot(i), need.slot_bytes[i]);
    if (need.staged) ctx_.staged(need.staged);
    if (need.expanded) ctx_.expanded(need.expanded);
    if (!trellis.numerics && !trellis.tail) warm_up(weights, max_rows);
  }

  void to_host(const Act& x, float* dst) override {
    end_forward(dst, x.data, size_t(x.rows * x.cols) * sizeof(float), "copy");
  }

  int32_t argmax(const Act& x) override {
    submit_argmax("argmax", x, argmax_.answer());
    end_forward(argmax_.host(), argmax_.answer(), sizeof(int32_t), "token id");
    return *argmax_.host();
  }

  // The keys of x's row 0 (top_logits.cu), recorded into the current one-token
  // step like argmax; rows the kernels do not serve take the default.
  std::vector<TopLogit> top_logits(const Act& x, int count) override {
    if (!top_logits_serves(x.cols, count)) return Backend::top_logits(x, count);
    submit_top_logits(x, count);
    end_forward(top_.host(), top_.scratch().keys, size_t(count) * sizeof(uint64_t), "top logits");
    if (top_.host()[0] == kNanRowKey) return {};  // a NaN in the row
    std::vector<TopLogit> top(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) top[size_t(i)] = top_logit_of(top_.host()[i]);
    return top;
  }

  // The argmax goes to steps_.device_token(), where the next one-token step
  // (embed with kNextToken) reads it, and from there to a pinned slot of the
  // token queue, whose event take_token() waits for. Under the profiler the
  // forward ends as argmax()'s does (it waits for the token, and counts that
  // wait in the step stats itself).
  void argmax_to_next(const Act& x) override {
    require(!tokens_.full(), "argmax_to_next",
            "at most " + std::to_string(TokenQueue::kSlots - 1) + " tokens may wait to be taken");
    int32_t* slot = steps_.device_token();
    submit_argmax("argmax_to_next", x, slot);
    next_token_written_ = true;
    const TokenQueue::Slot queued = tokens_.push(steps_.recording() && !profiler_);
    if (profiler_) return end_forward(queued.host, slot, sizeof(int32_t), "token id");
    if (steps_.recording()) steps_.finish(epoch());
    check_cuda(cudaMemcpyAsync(queued.host, slot, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_.get()),
               "cudaMemcpyAsync (token)");
    check_cuda(cudaEventRecord(queued.ready, stream_.get()), "cudaEventRecord (token)");
  }

  // The choice kernel (top_choice.cu) after the top logits' keys: its token
  // goes to steps_.device_token(), where the next one-token step reads it,
  // and its answer (the token or kDeclined) to a pinned slot of the token
  // queue, as argmax_to_next's token does. The draw is the step parameters'
  // (set with the recorded step's, or uploaded from the slot outside a
  // step, in stream order like a step's parameters). For counts the
  // kernels do not serve, the choice runs here after the forward ends
  // (top_logits), then the token goes up.
  void choose_to_next(const Act& x, int count, const TopChoiceParams& params, double u) override {
    require(!tokens_.full(), "choose_to_next",
            "at most " + std::to_string(TokenQueue::kSlots - 1) + " tokens may wait to be taken");
    next_token_written_ = true;
    if (!top_logits_serves(x.cols, count)) {
      const int32_t token = choose_from_top(top_logits(x, count), params, u);
      const TokenQueue::Slot slot = tokens_.push(false);
      *slot.host = token;
      *slot.upload = token == kDeclined ? 0 : token;
      check_cuda(cudaMemcpyAsync(steps_.device_token(), slot.upload, sizeof(int32_t), cudaMemcpyHostToDevice,
                                 stream_.get()),
                 "cudaMemcpyAsync (chosen token)");
      check_cuda(cudaEventRecord(slot.ready, stream_.get()), "cudaEventRecord (token)");
      return;
    }
    submit_top_logits(x, count);
    const TokenQueue::Slot slot = tokens_.push(steps_.recording() && !profiler_);
    double* draw = steps_.device_draw();
    if (steps_.recording()) {
      steps_.set_draw(u);
    } else {
      *slot.draw = u;
      check_cuda(cudaMemcpyAsync(draw, slot.draw, sizeof(double), cudaMemcpyHostToDevice, stream_.get()),
                 "cudaMemcpyAsync (draw)");
    }
    const uint64_t* keys = top_.scratch().keys;
    int32_t* next = steps_.device_token();
    int32_t* chosen = top_.chosen();
    submit(x.rows,
           {16, uint64_t(count), word(params.temperature), uint64_t(params.top_k), word(params.top_p),
            word(params.min_p)},
           -1, [=, this](Pos) {
             timed(profiler_.get(), "top_choice", "top_choice",
                   [&] { launch_top_choice(keys, count, params, draw, next, chosen, stream_.get()); });
           });
    if (profiler_) return end_forward(slot.host, chosen, sizeof(int32_t), "token id");
    if (steps_.recording()) steps_.finish(epoch());
    check_cuda(cudaMemcpyAsync(slot.host, chosen, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_.get()),
               "cudaMemcpyAsync (token)");
    check_cuda(cudaEventRecord(slot.ready, stream_.get()), "cudaEventRecord (token)");
  }

  int32_t take_token() override {
    require(!tokens_.empty(), "take_token", "no token is queued (argmax_to_next or choose_to_next queues one)");
    const TokenQueue::Taken t = tokens_.pop();
    const auto t0 = std::chrono::steady_clock::now();
    check_cuda(cudaEventSynchronize(t.ready), "cudaEventSynchronize (token)");
    if (t.step) steps_.waited(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return *t.host;
  }

  const CudaGraphStats& graph_stats() const { return steps_.stats(); }
  OpProfiler* profiler() const { return profiler_.get(); }

 private:
  // The argmax of x's last row into `answer` (device memory), recorded into
  // the current one-token step or launched now.
  void submit_argmax(const char* op, const Act& x, int32_t* answer) {
    require(x.rows >= 1 && x.cols >= 1, op, "the row is empty");
    submit(x.rows, {14, word(x.data), uint64_t(x.cols), word(answer)}, -1, [=, this](Pos) {
      timed(profiler_.get(), "argmax", "argmax",
            [&] { launch_argmax(f32(x), x.cols, argmax_.scratch(), answer, stream_.get()); });
    });
  }

  // The top_logits.cu keys of x's row 0 into top_.scratch().keys, recorded
  // into the current one-token step or launched now.
  void submit_top_logits(const Act& x, int count) {
    const TopLogitsScratch s = top_.scratch();
    submit(x.rows, {15, word(x.data), uint64_t(x.cols), uint64_t(count)}, -1, [=, this](Pos) {
      timed(profiler_.get(), "top_logits", "top_logits",
            [&] { launch_top_logit_keys(f32(x), x.cols, count, s, stream_.get()); });
    });
  }

  // Runs `launch` now, or records it into the current one-token step.
  template <typename F>
  void submit(int64_t rows, std::vector<uint64_t> signature, int64_t pos0, F launch) {
    settle_norm();
    image_ = {};
    if (steps_.recording()) {
      if (rows == 1 && steps_.add(std::move(signature), [launch, this] { launch(steps_.device_pos()); }, pos0)) return;
      steps_.flush();
    }
    launch(Pos{nullptr, int(pos0 < 0 ? 0 : pos0)});
  }

  void flush() { steps_.flush(); }

  // A forward's last step: the recorded one-token step runs (captured or
  // replayed), then `bytes` come back from the device and the host waits for
  // them (the profiler's "to_host" op, part `part`).
  void end_forward(void* dst, const void* src, size_t bytes, const char* part) {
    settle_norm();
    const bool step = steps_.recording();
    if (step) steps_.finish(epoch());
    const auto launched = std::chrono::steady_clock::now();
    // A copy into pageable memory may block the host until the stream reaches it.
    if (profiler_) profiler_->enqueued();
    timed(profiler_.get(), "to_host", part, [&] {
      check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync (to host)");
    });
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (to host)");
    if (step) steps_.waited(std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count());
    if (profiler_) profiler_->end_forward();
  }

  // The first call of a shape is slow on the host (cuBLAS picks and loads
  // its kernels, the trellis forms size their split-K scratch): run layer
  // 0's linears and the LM head once at max_rows and at one row, on zeros,
  // so that this happens when the session is made, not in its first prompt.
  // Default numerics only (a pinned form may not serve max_rows).
  void warm_up(const ModelWeights& weights, int64_t max_rows) {
    const LayerWeights& l = weights.layers.front();
    const std::vector<const CudaLinear*> linears = {
        &static_cast<const CudaLinear&>(*l.q),    &static_cast<const CudaLinear&>(*l.k),
        &static_cast<const CudaLinear&>(*l.v),    &static_cast<const CudaLinear&>(*l.o),
        &static_cast<const CudaLinear&>(*l.down), &static_cast<const CudaLinear&>(*weights.lm_head)};
    const auto& gate_up = static_cast<const CudaGateUp&>(*l.gate_up);
    int64_t widest = std::max(gate_up.in_features, gate_up.out_features);
    for (const CudaLinear* w : linears) widest = std::max({widest, w->in_features, w->out_features});
    const size_t bytes = size_t(max_rows * widest) * sizeof(float);
    const DeviceBuffer x(bytes), y(bytes);
    check_cuda(cudaMemsetAsync(x.get(), 0, bytes, stream_.get()), "cudaMemsetAsync (warm-up input)");
    for (const int64_t M : {max_rows, int64_t(1)}) {
      for (const CudaLinear* w : linears) w->apply(linear_run(), x.get<float>(), M, y.get<float>());
      gate_up.apply(linear_run(), x.get<float>(), M, y.get<float>());
    }
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (warm-up)");
  }

  // Decode attention (M <= kAttentionMaxDecodeRows): the key tiles go
  // round-robin to `splits` blocks per (kv head, row group), enough to give
  // every SM kAttentionBlocksPerSm, at most one per tile of the cache. The
  // count depends on the cache, not on pos0: a captured step replays at any
  // position, and an eager step runs the same blocks (bit-identical); blocks
  // with no tile below the position only write an empty partial. Prefill: one
  // split.
  int attention_splits(int64_t rows, int64_t heads, int64_t kv_heads, int64_t capacity) const {
    if (rows > kAttentionMaxDecodeRows) return 1;
    const int64_t tiles = (capacity + kAttentionTile - 1) / kAttentionTile;
    const int64_t blocks = kv_heads * attention_row_groups(rows, heads, kv_heads);
    const int64_t fill = (int64_t(kAttentionBlocksPerSm) * ctx_.sm_count() + blocks - 1) / blocks;
    return int(std::clamp<int64_t>(fill, 1, tiles));
  }

  LinearRun linear_run() { return {ctx_, scratch_, options_.trellis, profiler_.get()}; }

  // The bf16 input a trellis layer's kernels read: x as it is (signs null),
  // or rotated by (signs, T).
  struct InputTransform {
    const int8_t* signs = nullptr;
    int T = 0;
    bool operator==(const InputTransform&) const = default;
  };
  // A trellis layer's rotation: its signs and block size.
  static InputTransform rotation(const CudaLinear& l) { return {l.signs(), int(l.view().geom.T)}; }
  static InputTransform input_transform(const CudaLinear& l) {
    return l.rotates_input() ? rotation(l) : InputTransform{};
  }

  // A residual norm's output, written a second time as the bf16 input of the
  // layer that reads it next (Slot::norm_bf16). norm_readers_ (from reserve)
  // names that layer's input transform per norm weight — a layer's input norm
  // → its q, k, v; its post-attention norm → its gate/up — and whether its
  // kernels at one row can apply a fused norm's scale. Attention publishes
  // its output the same way for o when o takes its input as it is
  // (attention_images_). The image serves only the op right after (submit
  // and embed clear it), and only a reader whose own transform it is; any
  // other reader converts x itself.
  // A fused norm (one row, options_.fuse_norms, no rotation, a producer and
  // a reader whose kernels both can: trellis_ops.hpp) is not launched: the
  // producer adds into x and writes bf16(x ⊙ w) (Slot::residual_image) and
  // its Σx² partials (Slot::norm_partials), and the reader scales by s. Its
  // out is not written: an op other than that reader first runs the plain
  // norm on the updated x (settle_norm), which writes out and the image.
  struct NormReader {
    InputTransform transform;
    bool takes_scale = false;
  };
  struct FusedNorm {
    const VectorWeight* w = nullptr;
    Act x, out;  // the residual (already updated) and the norm's output
    float eps = 0;
    int partials = 0;  // 0: the norm was launched as usual
  };
  struct NormImage {
    const void* of = nullptr;
    int64_t rows = 0;
    InputTransform transform;
    FusedNorm fused;
  };
  // What a reader took: the bf16 image of its x (from), and the fused norm whose scale it applies (partials 0: none).
  struct TakenImage {
    bool from = false;
    FusedNorm fused;
  };
  std::optional<InputTransform> image_for(const VectorWeight& w, const Act& x) const {
    const auto it = norm_readers_.find(&w);
    if (it == norm_readers_.end() || w.size != x.cols) return std::nullopt;
    return it->second.transform;
  }
  // The partials a fused norm's producer `l` writes, or 0 where the norm is launched.
  int fused_norm_partials(const CudaLinear& l, const VectorWeight& norm, const Act& x) const {
    if (!options_.fuse_norms || x.rows != 1 || norm.size != x.cols) return 0;
    const auto it = norm_readers_.find(&norm);
    if (it == norm_readers_.end() || it->second.transform.signs || !it->second.takes_scale) return 0;
    return l.writes_residual_norm(options_.trellis, 1) ? l.residual_norm_partials(options_.trellis, ctx_.sm_count()) : 0;
  }
  static std::vector<uint64_t> with_image(std::vector<uint64_t> signature, const std::optional<InputTransform>& t) {
    signature.insert(signature.end(), {uint64_t(t.has_value()), t ? word(t->signs) : 0, t ? uint64_t(t->T) : 0});
    return signature;
  }
  void publish(const Act& out, const std::optional<InputTransform>& t, const FusedNorm& fused) {
    if (t) image_ = {out.data, out.rows, *t, fused};
  }
  void publish(const Act& out, const std::optional<InputTransform>& t) { publish(out, t, FusedNorm{}); }
  // The image of x if it is the reader's; a fused norm's pending scale only
  // for a reader that applies it (takes_scale), else the norm runs first
  // (settle_norm publishes its image of the same rows, so `mine` holds).
  TakenImage take_image(const Act& x, const CudaLinear& reader, bool takes_scale) {
    const bool mine = image_.of == x.data && image_.rows == x.rows && image_.transform == input_transform(reader);
    if (image_.fused.partials && !(mine && takes_scale)) settle_norm();
    const NormImage im = std::exchange(image_, NormImage{});
    return mine ? TakenImage{true, im.fused} : TakenImage{};
  }
  // A fused norm nobody read: the plain norm over the updated residual (no add), recorded like any op.
  void settle_norm() {
    if (!image_.fused.partials) return;
    const NormImage im = std::exchange(image_, NormImage{});
    const FusedNorm f = im.fused;
    const std::optional<InputTransform> t = im.transform;
    submit(im.rows, with_image({2, word(f.x.data), uint64_t(f.x.rows), uint64_t(f.x.cols), word(f.w), word(f.eps),
                                word(f.out.data)}, t),
           -1, [=, this](Pos) { launch_residual_norm(f.x, ResidualY{}, *f.w, f.eps, f.out, t); });
    publish(f.out, t);
  }
  // A reader's bf16 input: the image it took (a fused norm's or a launched one's), else its own conversion.
  uint16_t* input_bf16(const TakenImage& in, int64_t n) {
    const Slot slot = in.fused.partials ? Slot::residual_image : in.from ? Slot::norm_bf16 : Slot::x_bf16;
    return scratch_.get<uint16_t>(slot, size_t(n));
  }
  trellis::cuda::NormScale norm_scale(const TakenImage& in) {
    const FusedNorm& f = in.fused;
    if (!f.partials) return {};
    return {scratch_.get<double>(Slot::norm_partials, size_t(f.partials)), f.partials, int(f.w->size), f.eps};
  }
  trellis::cuda::ResidualNormWrite residual_write(const Act& x, const VectorWeight& norm, int partials) {
    return {f32(x), static_cast<const CudaVector&>(norm).get(),
            scratch_.get<uint16_t>(Slot::residual_image, size_t(x.cols)),
            scratch_.get<double>(Slot::norm_partials, size_t(partials))};
  }

  // y of a residual norm: fp32, or a trellis layer's bf16 kernel output (un-rotated by the norm when the layer
  // rotates its output).
  struct ResidualY {
    const void* data = nullptr;
    bool bf16 = false;
    InputTransform unrotate;
  };
  static ResidualY layer_output(const CudaLinear& l, const uint16_t* yb) {
    return {yb, true, l.rotates_output() ? rotation(l) : InputTransform{}};
  }

  // x += y (no y: x only read, out may be x: the rmsnorm op), out = rmsnorm(x, w) per group of w.size, and the
  // image of out for `image` (launched now: inside a submitted launch).
  void launch_residual_norm(const Act& x, const ResidualY& y, const VectorWeight& w, float eps, const Act& out,
                            const std::optional<InputTransform>& image) {
    AddRmsNormArgs a;
    a.x = f32(x);
    a.y = y.data;
    a.y_bf16 = y.bf16;
    a.y_signs = y.unrotate.signs;
    a.y_T = y.unrotate.T;
    a.w = static_cast<const CudaVector&>(w).get();
    a.eps = eps;
    a.n = int(w.size);
    a.groups = x.rows * x.cols / w.size;
    a.out = f32(out);
    if (image) {
      a.image = scratch_.get<uint16_t>(Slot::norm_bf16, size_t(x.rows * x.cols));
      a.image_signs = image->signs;
      a.image_T = image->T;
    }
    const std::string part = std::string(y.data ? "add+rmsnorm" : "rmsnorm") +
                             (!y.bf16 ? "" : y.unrotate.signs ? ", bf16 y un-rotated" : ", bf16 y") +
                             (!image ? "" : image->signs ? ", rotated bf16 image" : ", bf16 image");
    const char* op = y.data ? "add_rmsnorm" : w.size == x.cols ? "rmsnorm" : "qk_norm";
    timed(profiler_.get(), op, part, [&] { launch_add_rmsnorm(a, stream_.get()); });
  }

  // q, k and v (one kernel group) can read a fused norm's scale at M rows.
  bool qkv_take_norm_scale(const CudaLinear& q, const CudaLinear& k, const CudaLinear& v, int64_t M) const {
    return q.takes_norm_scale(options_.trellis, M) && k.takes_norm_scale(options_.trellis, M) &&
           v.takes_norm_scale(options_.trellis, M);
  }
  // One fused gate/up call whose bf16 output is down's kernel input as it is (down does not rotate its input).
  static bool mlp_fuses(const CudaGateUp& g, const CudaLinear& d) {
    return g.fused() && d.is_trellis() && !d.rotates_input();
  }
  // gate/up then down, bf16 throughout; returns down's bf16 output (Slot::y_bf16), or with `residual` down is
  // a fused norm's producer (no output). Launched now.
  const uint16_t* mlp_kernels(const CudaGateUp& g, const CudaLinear& d, const Act& x, int64_t mid_cols,
                              const TakenImage& in, const trellis::cuda::ResidualNormWrite* residual) {
    const LinearRun run = linear_run();
    const int64_t M = x.rows;
    uint16_t* xb = input_bf16(in, M * x.cols);
    uint16_t* hb = scratch_.get<uint16_t>(Slot::mlp_bf16, size_t(M * mid_cols));
    if (!in.from) g.kernel_input(run, f32(x), M, xb);
    g.kernel(run, xb, M, hb, norm_scale(in));
    if (residual) {
      d.kernel_residual_norm(run, hb, M, *residual);
      return nullptr;
    }
    uint16_t* yb = scratch_.get<uint16_t>(Slot::y_bf16, size_t(M * d.out_features));
    d.kernel(run, hb, M, yb);
    return yb;
  }

  // Changes whenever scratch that a captured graph uses moves.
  uint64_t epoch() {
    uint64_t h = scratch_.epoch();
    for (const uint64_t p : {word(ctx_.partials(0)), word(ctx_.counters(0)), word(ctx_.staged(0)),
                             word(ctx_.expanded(0))})
      h = (h ^ p) * 1099511628211ull;
    return h;
  }

  Stream stream_;  // first: destroyed after everything that uses it
  CudaBackendOptions options_;
  SignTable signs_;
  trellis::cuda::Context ctx_;
  Scratch scratch_;
  StepGraphs steps_;
  std::unique_ptr<OpProfiler> profiler_;
  std::map<const VectorWeight*, NormReader> norm_readers_;
  std::vector<bool> attention_images_;  // per layer: attention writes o's bf16 input too (Slot::norm_bf16)
  NormImage image_;
  DeviceBuffer workspace_;
  ArgmaxState argmax_;
  TopLogitsState top_;
  TokenQueue tokens_;
  bool next_token_written_ = false;  // an argmax_to_next has run: embed may take kNextToken
  std::string gpu_;
};

}  // namespace

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  if (!cuda_device_available()) throw Error("cuda backend: no CUDA device is visible");
  return std::make_unique<CudaBackend>(options);
}

std::optional<CudaGraphStats> cuda_graph_stats(const Backend& backend) {
  if (const auto* b = dynamic_cast<const CudaBackend*>(&backend)) return b->graph_stats();
  return std::nullopt;
}

std::optional<CudaProfileReport> cuda_profile(const Backend& backend) {
  const auto* b = dynamic_cast<const CudaBackend*>(&backend);
  if (!b || !b->profiler()) return std::nullopt;
  return b->profiler()->report();
}

void reset_cuda_profile(Backend& backend) {
  if (const auto* b = dynamic_cast<const CudaBackend*>(&backend); b && b->profiler()) b->profiler()->reset();
}

}  // namespace trellis::model
