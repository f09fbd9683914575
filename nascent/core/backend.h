// The Backend interface: one virtual per op family, plus storage,
// materialize and the releaser trio.
//
// Core validates every call before it reaches a backend, so a backend may
// assume: shapes agree (inputs already broadcast to the output shape as
// stride-0 views where the op broadcasts), dtypes are the ones the op's
// front-end documents, axes are normalised, and all tensors live on this
// backend. Outputs are freshly allocated and contiguous unless the op says
// otherwise; inputs may be any strided view (strides may be 0 or negative).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/op_table.h"
#include "nascent/core/quant.h"
#include "nascent/core/scalar.h"

namespace nascent {

class Tensor;

// Memory owned by a backend; tensors share it through shared_ptr. A backend
// derives from it (a host buffer, a device allocation, a lazy result).
class BackendData {
 public:
  explicit BackendData(size_t nbytes) : nbytes_(nbytes) {}
  virtual ~BackendData() = default;
  BackendData(const BackendData&) = delete;
  BackendData& operator=(const BackendData&) = delete;
  size_t nbytes() const { return nbytes_; }

 private:
  size_t nbytes_;
};

// Host bytes of a tensor's whole storage, kept alive by `owner`.
struct HostBytes {
  std::shared_ptr<const void> owner;
  const std::byte* data = nullptr;
  size_t size = 0;
};

struct MemoryStats {
  size_t allocated_bytes = 0;   // Held by live tensors.
  size_t cached_bytes = 0;      // Free but kept for reuse.
  size_t persistent_bytes = 0;  // Marked persistent (parameters, state).
  size_t peak_bytes = 0;        // Highest allocated_bytes so far.
};

struct UnaryParams {
  double a = 0.0;  // clamp: lower bound; pow_scalar: exponent.
  double b = 0.0;  // clamp: upper bound.
};

struct ReduceParams {
  int64_t correction = 1;  // var: divide by N - correction (Bessel).
  bool take_sqrt = false;  // var: return the square root (std).
};

struct RandomParams {
  uint64_t seed = 0;
  uint64_t offset = 0;  // Counter offset, a multiple of 4 (see random.h).
  double a = 0.0;       // uniform: low; normal: mean; bernoulli: p.
  double b = 1.0;       // uniform: high; normal: std.
};

struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};

struct Pool2dParams {
  int64_t kernel[2] = {2, 2};
  int64_t stride[2] = {2, 2};
  int64_t padding[2] = {0, 0};
  bool count_include_pad = true;  // avg_pool2d only.
};

// Hyper-parameters of the fused optimizer updates (optim/optimizer.h has
// the rules, PyTorch's).
struct OptimParams {
  double lr = 0.0;
  double weight_decay = 0.0;
  double momentum = 0.0;    // sgd_update.
  double dampening = 0.0;   // sgd_update.
  bool nesterov = false;    // sgd_update.
  bool first_step = false;  // sgd_update: the buffer takes the gradient.
  double beta1 = 0.9;       // adam_update.
  double beta2 = 0.999;     // adam_update.
  double eps = 1e-8;        // adam_update.
  int64_t step = 1;         // adam_update: 1-based, for bias correction.
  bool decoupled = false;   // adam_update: AdamW's weight decay.
};

// How RoPE pairs the rotated dimensions of a head, as ggml: norm rotates
// (2i, 2i + 1) (llama), neox rotates (i, i + dims / 2) (qwen2, gpt-neox).
enum class RopeMode : uint8_t { norm, neox };

// Rotary position embedding (ggml_rope_ext, MLX's fast::rope): pair i of
// the first `dims` values of a head at position p turns by
//   theta_i = p * base^(-2i / dims) / (scale * freq_factor_i),
// in f32 the way ggml computes it (base^(-2i / dims) as a running product);
// the values after `dims` pass through.
struct RopeParams {
  int64_t dims = 0;  // Rotated values per head (even); 0: the whole head.
  RopeMode mode = RopeMode::norm;
  double base = 10000.0;
  double scale = 1.0;    // Linear scaling: positions are divided by it.
  bool inverse = false;  // Turn by -theta: undoes the rotation (gradient).
};

// Scaled dot-product attention (MLX's fast::scaled_dot_product_attention,
// ggml_flash_attn_ext): softmax(scale * q k^T + mask) v per query head,
// query head h reading key/value head h / (Hq / Hkv) (GQA, MQA).
struct AttentionParams {
  double scale = 0.0;  // Of the scores; 0: 1 / sqrt(head_dim).
  // Query i of Lq sees keys j <= Lk - Lq + i: the queries are the last Lq
  // positions of the keys (a KV cache), as MLX's "causal" and
  // FlashAttention's bottom-right alignment.
  bool causal = false;
};

// One weight of a quant op: a u8 [N, row_bytes(type, K)] of GGML blocks
// whose rows are contiguous (the row stride may be larger), and where the
// op's result goes.
struct QuantArg {
  QuantType type = QuantType::f32;
  const Tensor* w = nullptr;
  Tensor* out = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Storage. allocate's memory is uninitialised.
  virtual std::shared_ptr<BackendData> allocate(size_t nbytes) = 0;
  virtual std::shared_ptr<BackendData> upload(const void* host,
                                              size_t nbytes) = 0;
  // Storage with the bytes of host memory that lives elsewhere (a GGUF file
  // mapped into memory), which `owner` keeps alive while a tensor uses it.
  // A host backend uses them in place and never writes them (nor counts
  // them in memory_stats); the default copies them (upload), as a device
  // backend must.
  virtual std::shared_ptr<BackendData> wrap(std::shared_ptr<const void> owner,
                                            const void* data, size_t nbytes);
  // The only way bytes leave a backend: CPU hands out its buffer, a device
  // backend waits for the tensor's pending work and copies it back.
  virtual HostBytes materialize(const Tensor& t) = 0;

  // Releaser: memory also goes back by RAII when the last handle dies; these
  // let a caller free early and keep parameters out of trim().
  virtual void release(Tensor& t);
  virtual void set_persistent(const Tensor& t, bool persistent) = 0;
  virtual bool is_persistent(const Tensor& t) const = 0;
  virtual void trim() = 0;
  virtual MemoryStats memory_stats() const = 0;

  // fill: every element = a. arange: element i = a + i * b.
  virtual void create(CreationOp op, Scalar a, Scalar b, Tensor& out) = 0;
  // Counter-based: element i of `out` (in row-major order) depends only on
  // the seed, the offset and i, never on threads or device (random.h).
  virtual void random(RandomOp op, const RandomParams& p, Tensor& out) = 0;
  // dst may be a strided view (not overlapping itself) and have another
  // dtype than src: the conversion rules are those of from_double().
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // x and out share dtype and shape; out may alias a contiguous x.
  virtual void unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                     Tensor& out) = 0;
  // a and b share dtype and out's shape (broadcast views). out has their
  // dtype, or bool for comparisons and logic ops.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b,
                      Tensor& out) = 0;
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b,
                     Tensor& out) = 0;
  // axes are sorted and unique; out has x's rank with size 1 on those axes.
  virtual void reduce(ReduceOp op, const Tensor& x,
                      const std::vector<int>& axes, const ReduceParams& p,
                      Tensor& out) = 0;
  virtual void scan(ScanOp op, const Tensor& x, int axis, Tensor& out) = 0;
  // a [..., M, K] and b [..., K, N] with equal (broadcast) batch dims.
  virtual void matmul(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // conv2d: a = input [N,C,H,W], b = weight [O,C/g,KH,KW], out [N,O,OH,OW].
  // conv2d_backward_input: a = grad_out, b = weight, out = grad_input.
  // conv2d_backward_weight: a = input, b = grad_out, out = grad_weight.
  virtual void conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                      const Tensor* bias, const Conv2dParams& p,
                      Tensor& out) = 0;
  // Forward: x [N,C,H,W] -> out; max_pool2d also writes out_indices (i64,
  // flat index into H*W) when asked. Backward: x = grad_out, indices from
  // the forward for max, out = grad_input.
  virtual void pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
                      const Pool2dParams& p, Tensor& out,
                      Tensor* out_indices) = 0;
  // x is contiguous; the op runs along `axis`.
  virtual void softmax(SoftmaxOp op, const Tensor& x, int axis,
                       Tensor& out) = 0;
  // x is a contiguous [rows, cols]; weight and bias contiguous [cols]. mean
  // and rstd ([rows], f32 or f64 as x) are written when non-null.
  virtual void norm(NormOp op, const Tensor& x, const Tensor* weight,
                    const Tensor* bias, double eps, Tensor& out, Tensor* mean,
                    Tensor* rstd) = 0;
  // index is i64 and already checked to be in range. gather: out[i][j] =
  // x[index[i][j]][j] along axis. index_select: index is 1-D. scatter_add:
  // out already holds x; adds src at index along axis.
  virtual void index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
                     const Tensor* src, Tensor& out) = 0;
  // Weights stored as GGML blocks (quant.h), one QuantArg each.
  // qmatmul: x a contiguous f32 [M, K]; for every arg out = x @ W^T, all
  // W of K columns (a layer's q, k and v share x: a backend may quantize x
  // once for them and run them as one job). dequantize: x null, one arg,
  // out f32 [N, K]. qembedding: x the i64 [n] ids (in range), one arg, out
  // f32 [n, K] the decoded rows. quantize: x a contiguous f32 [N, K], one
  // arg with w null, out u8 [N, row_bytes] the rows encoded as quant.h's
  // nascent/quant/codec.h's quantize_row does (byte for byte). The
  // default runs qembedding as index_select then dequantize and throws
  // BackendError for the others, so a backend without them still builds
  // and says what it lacks.
  virtual void quant(QuantOp op, const Tensor* x,
                     std::span<const QuantArg> args);
  // The rows of x a caller free to split them (a model's FFN over a long
  // prompt) should give one qmatmul of weights of `type`; 0: all of them.
  // More rows spread the work each weight costs per call (the CPU decodes
  // and packs its panels once a call) but grow the intermediates. The
  // default is 0, which a GPU with memory to spare wants.
  virtual int64_t qmatmul_block_rows(QuantType type) const;
  // One optimizer step written in place into param and the state (a
  // parameter update reads each array once instead of once per element-wise
  // op). param, grad and the state share shape and floating dtype; param
  // and the state are contiguous. sgd_update: state0 is the momentum buffer
  // (null without momentum). adam_update: state0 exp_avg, state1
  // exp_avg_sq. The default runs the same rule as element-wise ops of this
  // backend.
  virtual void optim(OptimOp op, const OptimParams& p, Tensor& param,
                     const Tensor& grad, Tensor* state0, Tensor* state1);

  // The transformer ops. Each default is composed from the ops above, on
  // this backend (core/ops/rope.cpp, attention.cpp, glu.cpp); a backend
  // overrides one to run its own kernel, and may call the default for the
  // dtypes its kernel lacks.
  //
  // rope: x [..., n, heads, head_dim] (any strides), positions a contiguous
  // i32 [n], freq_factors null or a contiguous f32 [dims / 2]; p.dims is
  // even, in (0, head_dim]. out has x's shape and dtype, contiguous.
  virtual void rope(const Tensor& x, const Tensor& positions,
                    const Tensor* freq_factors, const RopeParams& p,
                    Tensor& out);
  // attention: q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] of
  // one floating dtype, any strides; Hq is a multiple of Hkv, p.scale is
  // set, Lq <= Lk when causal. mask null or additive, of q's dtype, a
  // (broadcast) view of shape [B, Hq, Lq, Lk]. out [B, Hq, Lq, Dv] is the
  // transpose(1, 2) of a contiguous [B, Lq, Hq, Dv].
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor* mask, const AttentionParams& p,
                         Tensor& out);
  // glu: out = act(gate) * up with act silu (swiglu) or gelu_tanh (geglu);
  // gate and up share shape and floating dtype, any strides; out
  // contiguous.
  virtual void glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out);
};

// The backend used where none is named. Defined outside core (the library
// picks the CPU backend); set_default_backend replaces it.
Backend& default_backend();
void set_default_backend(Backend* backend);

}  // namespace nascent
