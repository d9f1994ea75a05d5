// The op interface the forward pass is written against, once, for every
// backend (CPU now; CUDA implements the same class).
//
// Activations are `Act` views: a row-major matrix [rows, cols] in the
// backend's memory and element type (CPU: fp32 in host memory). The model
// only allocates them (alloc), takes row ranges of them (Act::slice) and
// hands them to ops; it never touches their elements. Ops read their inputs
// and write their outputs completely; an output never aliases an input
// unless the op says "in place".
//
// Weights are loaded once from host sources (zero-copy views into the mapped
// safetensors files, valid while the format::ModelDir lives) into opaque
// handles the backend defines by subclassing LinearWeight, GateUpWeight,
// VectorWeight and EmbeddingWeight; a handle is only valid with the backend
// that made it.
//
// Precision: the math below is stated exactly; the CPU backend runs it in
// fp32 (trellis layers take x rounded to bf16, their kernels' input). A
// backend may keep activations and the KV cache in a narrower type as long
// as the fixture's parity test holds (tests/model/parity_test.cpp: max
// |Δlogit| ≤ 0.05 against transformers, the same top-1 on ≥ 127 of 128).
//
// Ops, with M = x.rows:
//   embed(E, ids, out)          out[m] = E[ids[m]]                      out [M, hidden]
//   rmsnorm(x, w, eps, out)     each group of n = w.size() consecutive elements of a row
//                               (n divides cols): out = g / sqrt(mean(g²) + eps) ⊙ w.
//                               n = hidden: the layer norms; n = head_dim: Qwen3's QK-norm.
//                               May run in place (out == x)
//   rope(x, f, pos0)            in place; row m is at position p = pos0 + m; every head
//                               (d = 2·f.size() consecutive elements) is rotated
//                               "rotate-half" style (HF Llama/Qwen) by the inverse
//                               frequencies f (trellis/model/rope.hpp): for i < d/2,
//                               with angle a_i = fp32(p · f_i),
//                               (u, v) = (x_i, x_{i+d/2}) ← (u cos a_i − v sin a_i,
//                                                          v cos a_i + u sin a_i)
//   attention(q, k, v, cache, layer, pos0, out)
//                               stores rows m of k and v as positions pos0 + m of
//                               `layer` in the cache, then causal GQA attention:
//                               out[m, head h] = Σ_{j ≤ pos0+m} softmax_j(q[m,h]·K[j,g]/√d) V[j,g]
//                               with g = h / (heads / kv_heads); q, out [M, heads·d],
//                               k, v [M, kv_heads·d]
//   linear(W, x, out)           out = x Wᵀ, W [out_features, in_features] (dense or trellis,
//                               the backend picks the kernel by M)
//   gate_up_swiglu(W, x, out)   out = silu(x Gᵀ) ⊙ (x Uᵀ), silu(g) = g / (1 + e^−g)
//   add(x, y)                   in place: x += y
//   to_host(x, dst)             dst[M·cols] = x as fp32 (waits for the backend's work)
//   argmax(x)                   greedy sampling of row 0: model::argmax (sampling.hpp) of
//                               its cols values, the first of the largest (waits like
//                               to_host; CUDA copies back one id, not the row)
//   top_logits(x, count)        largest_logits (top_logits.hpp) of row 0: its count
//                               largest values with their ids, nothing when it holds a
//                               NaN (waits like to_host; default: the row to the host;
//                               CUDA sorts on the device and copies back count entries,
//                               a −0 among them as +0)
//
// Fused ops: each is defined as the composition of the ops above that its
// default implementation (below the class) runs, and a backend overrides it
// to do the same work in fewer passes (CUDA: one bf16 input for the three
// projections, the MLP's intermediate kept in bf16, one kernel for the add
// and the norm). The CPU backend keeps the defaults, so its results are the
// composition's bit for bit.
//   qkv_rope(Wq, Wk, Wv, x, q_norm, k_norm, eps, f, pos0, q, k, v)
//                               q = x Wqᵀ, k = x Wkᵀ, v = x Wvᵀ; with q_norm and k_norm
//                               (Qwen3's QK-norm; both or neither) q = rmsnorm(q, q_norm),
//                               k = rmsnorm(k, k_norm) per head; then rope(q, f, pos0),
//                               rope(k, f, pos0). x, q, k, v distinct
//   add_rmsnorm(x, y, w, eps, out)
//                               x += y, then out = rmsnorm(x, w, eps); out distinct from x, y
//   mlp(G, D, x, mid, out)      mid = gate_up_swiglu(G, x), out = mid Dᵀ; mid [M, intermediate]
//                               is scratch whose contents afterwards are unspecified (a
//                               backend may keep the intermediate elsewhere); x, mid, out
//                               distinct
//   linear_add_rmsnorm(W, a, proj, x, w, eps, out)
//                               linear(W, a, proj), then add_rmsnorm(x, proj, w, eps, out):
//                               a residual branch that ends in a projection (attention's
//                               o_proj); proj is scratch [M, out_features] whose contents
//                               afterwards are unspecified; a, proj, x, out distinct
//   mlp_add_rmsnorm(G, D, h, mid, proj, x, w, eps, out)
//                               mlp(G, D, h, mid, proj), then add_rmsnorm(x, proj, w, eps, out);
//                               mid and proj scratch as above; out may be h, otherwise all
//                               distinct
//
// reserve(weights, cache, max_rows) sizes whatever scratch the ops need for
// forwards of up to max_rows tokens of these weights with this cache, so
// that no later op allocates (a Session calls it when it is made; default:
// nothing to reserve).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trellis/error.hpp"
#include "trellis/format/tensor_info.hpp"
#include "trellis/format/trellis_tensor.hpp"
#include "trellis/model/top_logits.hpp"

namespace trellis::model {

// A borrowed view of a backend activation matrix.
struct Act {
  void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t elem_bytes = 0;

  // Rows [begin, begin + n).
  Act slice(int64_t begin, int64_t n) const {
    return {static_cast<char*>(data) + begin * cols * elem_bytes, n, cols, elem_bytes};
  }
};

// An owned activation matrix; `storage` frees the memory the backend allocated.
struct ActBuffer {
  std::shared_ptr<void> storage;
  Act act;
};

// Where the bytes of a linear layer come from: exactly one of `dense`
// ([out, in], bf16/fp16/fp32) and `trellis` (codes, scales, geometry and
// optional rotation) is set.
struct LinearSource {
  std::string name;
  const format::TensorInfo* dense = nullptr;
  const format::TrellisTensor* trellis = nullptr;

  int64_t in_features() const { return trellis ? trellis->geom.in_features : dense->shape.at(1); }
  int64_t out_features() const { return trellis ? trellis->geom.out_features : dense->shape.at(0); }
};

class LinearWeight {
 public:
  LinearWeight(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  virtual ~LinearWeight() = default;
  const int64_t in_features;
  const int64_t out_features;
};

class GateUpWeight {
 public:
  GateUpWeight(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  virtual ~GateUpWeight() = default;
  const int64_t in_features;
  const int64_t out_features;  // intermediate size
};

// A 1-D weight (norm scales, RoPE frequencies).
class VectorWeight {
 public:
  explicit VectorWeight(int64_t n) : size(n) {}
  virtual ~VectorWeight() = default;
  const int64_t size;
};

class EmbeddingWeight {
 public:
  EmbeddingWeight(int64_t vocab, int64_t hidden) : vocab(vocab), hidden(hidden) {}
  virtual ~EmbeddingWeight() = default;
  const int64_t vocab;
  const int64_t hidden;
};

// Keys and values of every layer for positions [0, capacity).
class KvCache {
 public:
  KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t capacity)
      : layers(layers), kv_heads(kv_heads), head_dim(head_dim), capacity(capacity) {}
  virtual ~KvCache() = default;
  const int64_t layers;
  const int64_t kv_heads;
  const int64_t head_dim;
  const int64_t capacity;
};

// The argument rules of Backend::attention (shapes agree with the cache, the
// rows fit in it); a trellis::Error "<backend> backend: attention: …"
// otherwise. Returns the number of query heads. Inline: the CUDA backend's
// library is linked below trellis_model.
inline int64_t attention_heads(const Act& q, const Act& k, const Act& v, const KvCache& cache, int64_t layer,
                               int64_t pos0, const Act& out, const char* backend) {
  const auto fail = [&](const std::string& rule) {
    throw Error(std::string(backend) + " backend: attention: " + rule);
  };
  const int64_t kv_cols = cache.kv_heads * cache.head_dim;
  const int64_t heads = q.cols / cache.head_dim;
  if (!(k.cols == kv_cols && v.cols == kv_cols && q.cols % cache.head_dim == 0 && heads % cache.kv_heads == 0 &&
        k.rows == q.rows && v.rows == q.rows && out.rows == q.rows && out.cols == q.cols))
    fail("shapes");
  if (!(layer >= 0 && layer < cache.layers && pos0 >= 0 && pos0 + q.rows <= cache.capacity))
    fail("positions " + std::to_string(pos0) + ".." + std::to_string(pos0 + q.rows) + " exceed the cache (" +
         std::to_string(cache.capacity) + ")");
  return heads;
}

struct ModelWeights;

class Backend {
 public:
  virtual ~Backend() = default;

  // E.g. "cpu, 2 threads".
  virtual std::string name() const = 0;

  // Weights. Throw trellis::Error naming the tensor for what the backend
  // cannot serve (a dtype, a trellis geometry).
  virtual std::unique_ptr<LinearWeight> load_linear(const LinearSource& w) = 0;
  virtual std::unique_ptr<GateUpWeight> load_gate_up(const LinearSource& gate, const LinearSource& up) = 0;
  virtual std::unique_ptr<VectorWeight> load_vector(const format::TensorInfo& w) = 0;
  virtual std::unique_ptr<VectorWeight> load_vector(std::span<const float> values) = 0;
  virtual std::unique_ptr<EmbeddingWeight> load_embedding(const format::TensorInfo& w) = 0;

  // State.
  virtual ActBuffer alloc(int64_t rows, int64_t cols) = 0;
  virtual std::unique_ptr<KvCache> make_kv_cache(int64_t layers, int64_t kv_heads, int64_t head_dim,
                                                 int64_t capacity) = 0;

  // Ops (contracts above).
  virtual void embed(const EmbeddingWeight& e, std::span<const int32_t> ids, const Act& out) = 0;
  virtual void rmsnorm(const Act& x, const VectorWeight& w, float eps, const Act& out) = 0;
  virtual void rope(const Act& x, const VectorWeight& inv_freq, int64_t pos0) = 0;
  virtual void attention(const Act& q, const Act& k, const Act& v, KvCache& cache, int64_t layer,
                         int64_t pos0, const Act& out) = 0;
  virtual void linear(const LinearWeight& w, const Act& x, const Act& out) = 0;
  virtual void gate_up_swiglu(const GateUpWeight& w, const Act& x, const Act& out) = 0;
  virtual void add(const Act& x, const Act& y) = 0;
  virtual void to_host(const Act& x, float* dst) = 0;
  virtual int32_t argmax(const Act& x) = 0;
  virtual std::vector<TopLogit> top_logits(const Act& x, int count);

  // Pipelined greedy decoding. argmax_to_next(x): the argmax of x's last row
  // (as argmax()) becomes the token of the next embed whose one id is
  // kNextToken, and joins a queue that take_token() empties in order,
  // waiting for the device where it must. A backend may return from
  // argmax_to_next before the token exists, so that the host prepares the
  // next forward while the device runs this one.
  static constexpr int32_t kNextToken = -1;
  virtual void argmax_to_next(const Act& x) = 0;
  virtual int32_t take_token() = 0;
  // Pipelined sampling. choose_to_next(x, count, params, u) is
  // argmax_to_next for the token choose_from_top (top_choice.hpp) picks
  // with the draw u from top_logits(x, count): the token, or kDeclined
  // where those entries do not settle it (a NaN in the row, equal values
  // past the margin). The token (0 for kDeclined) is the next kNextToken
  // embed's, and take_token() returns it (kDeclined as it is). A backend
  // may choose on the device (CUDA: a kernel after the top logits', so the
  // largest logits never come back and the next forward, launched before
  // the choice exists, reads it on the device).
  static constexpr int32_t kDeclined = kChoiceDeclined;
  virtual void choose_to_next(const Act& x, int count, const TopChoiceParams& params, double u) = 0;

  // Fused ops (contracts above; defaults: the compositions, below).
  virtual void qkv_rope(const LinearWeight& wq, const LinearWeight& wk, const LinearWeight& wv, const Act& x,
                        const VectorWeight* q_norm, const VectorWeight* k_norm, float eps,
                        const VectorWeight& inv_freq, int64_t pos0, const Act& q, const Act& k, const Act& v);
  virtual void add_rmsnorm(const Act& x, const Act& y, const VectorWeight& w, float eps, const Act& out);
  virtual void mlp(const GateUpWeight& gate_up, const LinearWeight& down, const Act& x, const Act& mid,
                   const Act& out);
  virtual void linear_add_rmsnorm(const LinearWeight& w, const Act& a, const Act& proj, const Act& x,
                                  const VectorWeight& norm, float eps, const Act& out);
  virtual void mlp_add_rmsnorm(const GateUpWeight& gate_up, const LinearWeight& down, const Act& h, const Act& mid,
                               const Act& proj, const Act& x, const VectorWeight& norm, float eps, const Act& out);

  virtual void reserve(const ModelWeights& /*weights*/, const KvCache& /*cache*/, int64_t /*max_rows*/) {}
};

// The defaults are inline: the CUDA backend's library, which calls them for
// the cases it does not fuse, is linked below trellis_model.
inline void Backend::qkv_rope(const LinearWeight& wq, const LinearWeight& wk, const LinearWeight& wv, const Act& x,
                              const VectorWeight* q_norm, const VectorWeight* k_norm, float eps,
                              const VectorWeight& inv_freq, int64_t pos0, const Act& q, const Act& k,
                              const Act& v) {
  if (!q_norm != !k_norm) throw Error(name() + ": qkv_rope: give both QK-norm weights or neither");
  linear(wq, x, q);
  linear(wk, x, k);
  linear(wv, x, v);
  if (q_norm) {
    rmsnorm(q, *q_norm, eps, q);
    rmsnorm(k, *k_norm, eps, k);
  }
  rope(q, inv_freq, pos0);
  rope(k, inv_freq, pos0);
}

inline std::vector<TopLogit> Backend::top_logits(const Act& x, int count) {
  std::vector<float> row(size_t(x.cols));
  to_host(x.slice(0, 1), row.data());
  return largest_logits(row, size_t(count));
}

inline void Backend::add_rmsnorm(const Act& x, const Act& y, const VectorWeight& w, float eps, const Act& out) {
  add(x, y);
  rmsnorm(x, w, eps, out);
}

inline void Backend::mlp(const GateUpWeight& gate_up, const LinearWeight& down, const Act& x, const Act& mid,
                         const Act& out) {
  gate_up_swiglu(gate_up, x, mid);
  linear(down, mid, out);
}

inline void Backend::linear_add_rmsnorm(const LinearWeight& w, const Act& a, const Act& proj, const Act& x,
                                        const VectorWeight& norm, float eps, const Act& out) {
  linear(w, a, proj);
  add_rmsnorm(x, proj, norm, eps, out);
}

inline void Backend::mlp_add_rmsnorm(const GateUpWeight& gate_up, const LinearWeight& down, const Act& h,
                                     const Act& mid, const Act& proj, const Act& x, const VectorWeight& norm,
                                     float eps, const Act& out) {
  mlp(gate_up, down, h, mid, proj);
  add_rmsnorm(x, proj, norm, eps, out);
}

}  // namespace trellis::model
