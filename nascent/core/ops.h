// The op front-ends: each validates its arguments (shapes, dtypes, axes,
// backends), promotes dtypes, computes the output shape, allocates the output
// and hands the work to the tensors' Backend. Errors name the op and shapes.
//
// Implementations live in core/ops/, one file per op family.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "nascent/core/random.h"
#include "nascent/core/tensor.h"

namespace nascent {

using Axes = std::vector<int64_t>;

// --- Creation (ops/creation.cpp) -------------------------------------------
Tensor full(const Shape& shape, Scalar value, Backend& backend,
            DType dtype = DType::f32);
Tensor zeros(const Shape& shape, Backend& backend, DType dtype = DType::f32);
Tensor ones(const Shape& shape, Backend& backend, DType dtype = DType::f32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
// Values start, start + step, ... below stop (above, for a negative step).
Tensor arange(Scalar start, Scalar stop, Scalar step, Backend& backend,
              DType dtype = DType::f32);
Tensor arange(int64_t stop, Backend& backend, DType dtype = DType::i64);
// Copies host values into a new tensor; shape defaults to 1-D.
Tensor from_data(const void* data, const Shape& shape, DType dtype,
                 Backend& backend);
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                   Backend& backend);
template <class T>
Tensor from_vector(const std::vector<T>& values, Backend& backend) {
  return from_vector(values, Shape{int64_t(values.size())}, backend);
}

// --- Random (ops/random.cpp); the same seed gives the same numbers on every
// backend and thread count. The Generator overloads advance its offset.
Tensor rand(const Shape& shape, Backend& backend, uint64_t seed,
            DType dtype = DType::f32);  // Uniform in [0, 1).
Tensor randn(const Shape& shape, Backend& backend, uint64_t seed,
             DType dtype = DType::f32);
Tensor uniform(const Shape& shape, double low, double high, Backend& backend,
               Generator& gen, DType dtype = DType::f32);
Tensor normal(const Shape& shape, double mean, double std, Backend& backend,
              Generator& gen, DType dtype = DType::f32);
// 1 with probability p, else 0, in `dtype`.
Tensor bernoulli(const Shape& shape, double p, Backend& backend, Generator& gen,
                 DType dtype = DType::f32);

// --- Element-wise unary (ops/unary.cpp). Ops on real numbers (exp, sigmoid,
// ...) take integer inputs as f32; neg, abs, sign, square, relu and clamp
// keep integer dtypes.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);       // x * Phi(x), with erf.
Tensor gelu_tanh(const Tensor& x);  // The tanh approximation.
Tensor silu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // Half to even, as PyTorch.
Tensor reciprocal(const Tensor& x);
Tensor square(const Tensor& x);
Tensor clamp(const Tensor& x, double low, double high);
Tensor pow(const Tensor& x, double exponent);
Tensor logical_not(const Tensor& x);
Tensor unary(UnaryOp op, const Tensor& x, const UnaryParams& p = {});

// --- Element-wise binary with broadcasting and promotion (ops/binary.cpp).
// div is true division (integers give f32). Comparisons and logic give bool.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// With a scalar: the scalar takes the tensor's dtype (a float scalar with an
// integer tensor gives f32), as in PyTorch.
Tensor binary(BinaryOp op, const Tensor& a, Scalar b);
Tensor binary(BinaryOp op, Scalar a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor maximum(const Tensor& a, Scalar b);
Tensor minimum(const Tensor& a, Scalar b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
// cond is bool (other dtypes are cast); a and b are promoted together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);

// --- Reductions (ops/reduce.cpp). Empty axes means all axes. sum and prod of
// integers and bool give i64; mean, var, std and logsumexp need floats
// (integers are taken as f32); argmax/argmin give i64 and take one axis, or
// none for the flattened tensor.
Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor var(const Tensor& x, const Axes& axes = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, const Axes& axes = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor argmax(const Tensor& x);  // Of the flattened tensor, 0-d.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmin(const Tensor& x);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor cumsum(const Tensor& x, int64_t axis);

// --- Linear algebra (ops/matmul.cpp): NumPy matmul semantics (1-D operands
// gain and lose an axis; batch axes broadcast). f16/bf16 accumulate in f32.
Tensor matmul(const Tensor& a, const Tensor& b);

// --- Convolution and pooling (ops/conv.cpp, ops/pool.cpp), NCHW.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias,
              const Conv2dParams& p = {});
Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight,
                             const Shape& input_shape,
                             const Conv2dParams& p = {});
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& grad_out,
                              const Shape& weight_shape,
                              const Conv2dParams& p = {});
Tensor max_pool2d(const Tensor& x, const Pool2dParams& p);
// Values and i64 indices into each plane's H*W.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x,
                                                  const Pool2dParams& p);
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p);
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                           const Shape& input_shape, const Pool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape,
                           const Pool2dParams& p);

// --- Softmax and norms (ops/softmax.cpp, ops/norm.cpp).
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// Normalises over the trailing normalized_ndim axes; weight and bias (may be
// null) have those axes' shape.
Tensor layer_norm(const Tensor& x, const Tensor* weight, const Tensor* bias,
                  double eps = 1e-5, int64_t normalized_ndim = 1);
Tensor rms_norm(const Tensor& x, const Tensor* weight, double eps = 1e-6,
                int64_t normalized_ndim = 1);

// --- Indexing (ops/index.cpp). Indices are i64 or i32; negative or
// out-of-range indices raise ValueError naming the op.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index,
                   const Tensor& src);
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// weight [V, D], ids of any shape -> ids.shape + [D].
Tensor embedding(const Tensor& weight, const Tensor& ids);
Tensor one_hot(const Tensor& ids, int64_t num_classes,
               DType dtype = DType::i64);

// --- Quantized weights (ops/quant.cpp). w is a u8 [..., row_bytes(type,
// K)] of GGML blocks (quant.h), for instance a view of a GGUF file mapped
// into memory (cpu::Backend::wrap); its rows must be contiguous.
// x [..., K] @ W^T for a 2-D w [N, row_bytes]: [..., N] in x's (floating)
// dtype, computed in f32 (the CPU quantizes x to 8 bits on the fly for the
// block types, as llama.cpp does).
Tensor qmatmul(const Tensor& x, const Tensor& w, QuantType type);
// A weight matrix in its stored type, e.g. one tensor of a GGUF file.
struct QuantWeight {
  Tensor w;  // u8 [N, row_bytes(type, K)].
  QuantType type = QuantType::f32;
};
Tensor qmatmul(const Tensor& x, const QuantWeight& w);
// x @ W_i^T for several weights of the same K that share x (a layer's q, k
// and v projections, or its gate and up): one result per weight, as the
// single form gives, in one backend call, so a backend may quantize x once
// and run the products as one job.
std::vector<Tensor> qmatmul(const Tensor& x,
                            std::span<const QuantWeight> weights);
// Rows `ids` (i32 or i64, any shape, in [0, N)) of w [N, row_bytes(type,
// K)], decoded: f32 ids.shape + [K] (ggml_get_rows; the token embedding of
// a quantized model).
Tensor qembedding(const Tensor& w, const Tensor& ids, QuantType type);
// The f32 values: [..., row_bytes] -> [..., K].
Tensor dequantize(const Tensor& w, QuantType type);
// The rows of x [..., K] as blocks, u8 [..., row_bytes], on x's backend,
// byte for byte what the reference quantizers (nascent/quant/codec.h) give
// (the CPU runs them on its threads, CUDA on the host).
Tensor quantize(const Tensor& x, QuantType type);

// --- Transformer ops (ops/rope.cpp, ops/attention.cpp, ops/glu.cpp): the
// parameters are in backend.h. Each runs the backend's kernel, or a default
// composed from the ops above where the backend has none.

// RoPE (RopeParams says what is computed): x [..., n, heads, head_dim] of a
// floating dtype, positions i32 or i64 [n] (one per token: tokens of
// several sequences may sit side by side), freq_factors null or f32
// [dims / 2] (llama 3.1's rope_freqs). Returns x's shape and dtype.
Tensor rope(const Tensor& x, const Tensor& positions, const RopeParams& p,
            const Tensor* freq_factors = nullptr);
// Positions offset, offset + 1, ... (one sequence after `offset` cached
// tokens).
Tensor rope(const Tensor& x, int64_t offset, const RopeParams& p,
            const Tensor* freq_factors = nullptr);

// Attention (AttentionParams says what is computed): q [B, Hq, Lq, D], k [B,
// Hkv, Lk, D], v [B, Hkv, Lk, Dv] of a floating dtype (promoted together),
// Hq a multiple of Hkv; mask null, additive (floating) or bool (true: the
// key is seen), broadcastable to [B, Hq, Lq, Lk]; causal needs Lq <= Lk.
// Returns [B, Hq, Lq, Dv] laid out as [B, Lq, Hq, Dv], so that its
// transpose(1, 2) (the heads side by side per token) is contiguous. A query
// that sees no key gets NaN, as in PyTorch.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                    const Tensor& v,
                                    const AttentionParams& p = {},
                                    const Tensor* mask = nullptr);

// Gated linear units of the FFN: silu(gate) * up (LLaMA, Qwen, Mistral)
// and gelu_tanh(gate) * up (Gemma), in one pass. gate and up have one
// shape; dtypes are promoted (integers are taken as f32).
Tensor swiglu(const Tensor& gate, const Tensor& up);
Tensor geglu(const Tensor& gate, const Tensor& up);
Tensor glu(GluOp op, const Tensor& gate, const Tensor& up);

// --- Shape ops that copy (ops/shape.cpp).
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis = 0);
// Views of consecutive pieces of `size` (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes,
                          int64_t axis = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0);
// pads: (before, after) pairs from the last axis backwards, as PyTorch's
// F.pad; constant value.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads,
           Scalar value = 0.0);
Tensor flip(const Tensor& x, const Axes& axes);
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
Tensor tril(const Tensor& x, int64_t k = 0);
Tensor triu(const Tensor& x, int64_t k = 0);
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// --- In-place writes (ops/copy.cpp). Writes src into dst, which may be any
// view (a slice of a larger tensor, a transposed parameter): src broadcasts
// to dst's shape and converts to dst's dtype. dst must not overlap itself
// (no broadcast axes). Optimizers update parameters with it.
void assign(const Tensor& dst, const Tensor& src);
void assign(const Tensor& dst, Scalar value);

// --- Optimizer updates (ops/optim.cpp), in place: param and the state
// change where they live; optim/ builds SGD, Adam and AdamW on them. The
// gradient may be any layout; param and the state must be contiguous.
void sgd_update(const Tensor& param, const Tensor& grad,
                const Tensor* momentum_buffer, const OptimParams& p);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const OptimParams& p);

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                   Backend& backend) {
  if (int64_t(values.size()) != checked_numel(shape, "from_vector")) {
    throw ShapeError("from_vector: " + std::to_string(values.size()) +
                     " values do not fill shape " + to_string(shape));
  }
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_data(bytes.data(), shape, DType::boolean, backend);
  } else {
    return from_data(values.data(), shape, dtype_of<T>, backend);
  }
}

}  // namespace nascent
