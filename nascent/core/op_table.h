// The op set, declared once. Backends switch over the per-family enums (a
// missing case is a compile error under -Werror=switch), and the conformance
// suite walks op_table() so that no backend can silently lack an op.
//
// Each list entry is X(family, name, differentiable).
#pragma once

#include <array>
#include <cstdint>

namespace nascent {

#define NASCENT_CREATION_OPS(X) \
  X(Creation, fill, false)      \
  X(Creation, arange, false)

#define NASCENT_RANDOM_OPS(X) \
  X(Random, uniform, false)   \
  X(Random, normal, false)    \
  X(Random, bernoulli, false)

// copy also converts dtype (cast) and writes into strided views (cat, pad).
#define NASCENT_COPY_OPS(X) X(Copy, copy, true)

#define NASCENT_UNARY_OPS(X) \
  X(Unary, neg, true)        \
  X(Unary, abs, true)        \
  X(Unary, sign, false)      \
  X(Unary, exp, true)        \
  X(Unary, log, true)        \
  X(Unary, log1p, true)      \
  X(Unary, expm1, true)      \
  X(Unary, sqrt, true)       \
  X(Unary, rsqrt, true)      \
  X(Unary, sin, true)        \
  X(Unary, cos, true)        \
  X(Unary, tanh, true)       \
  X(Unary, sigmoid, true)    \
  X(Unary, relu, true)       \
  X(Unary, gelu, true)       \
  X(Unary, gelu_tanh, true)  \
  X(Unary, silu, true)       \
  X(Unary, erf, true)        \
  X(Unary, floor, false)     \
  X(Unary, ceil, false)      \
  X(Unary, round, false)     \
  X(Unary, reciprocal, true) \
  X(Unary, square, true)     \
  X(Unary, clamp, true)      \
  X(Unary, pow_scalar, true) \
  X(Unary, logical_not, false)

#define NASCENT_BINARY_OPS(X)   \
  X(Binary, add, true)          \
  X(Binary, sub, true)          \
  X(Binary, mul, true)          \
  X(Binary, div, true)          \
  X(Binary, pow, true)          \
  X(Binary, maximum, true)      \
  X(Binary, minimum, true)      \
  X(Binary, eq, false)          \
  X(Binary, ne, false)          \
  X(Binary, lt, false)          \
  X(Binary, le, false)          \
  X(Binary, gt, false)          \
  X(Binary, ge, false)          \
  X(Binary, logical_and, false) \
  X(Binary, logical_or, false)  \
  X(Binary, logical_xor, false)

#define NASCENT_WHERE_OPS(X) X(Where, where, true)

#define NASCENT_REDUCE_OPS(X) \
  X(Reduce, sum, true)        \
  X(Reduce, mean, true)       \
  X(Reduce, max, true)        \
  X(Reduce, min, true)        \
  X(Reduce, prod, true)       \
  X(Reduce, argmax, false)    \
  X(Reduce, argmin, false)    \
  X(Reduce, var, true)        \
  X(Reduce, logsumexp, true)

#define NASCENT_SCAN_OPS(X) X(Scan, cumsum, true)

#define NASCENT_MATMUL_OPS(X) X(Matmul, matmul, true)

#define NASCENT_CONV_OPS(X)            \
  X(Conv, conv2d, true)                \
  X(Conv, conv2d_backward_input, true) \
  X(Conv, conv2d_backward_weight, true)

#define NASCENT_POOL_OPS(X)           \
  X(Pool, max_pool2d, true)           \
  X(Pool, avg_pool2d, true)           \
  X(Pool, max_pool2d_backward, false) \
  X(Pool, avg_pool2d_backward, false)

#define NASCENT_SOFTMAX_OPS(X) \
  X(Softmax, softmax, true)    \
  X(Softmax, log_softmax, true)

#define NASCENT_NORM_OPS(X) \
  X(Norm, layer_norm, true) \
  X(Norm, rms_norm, true)

#define NASCENT_INDEX_OPS(X)  \
  X(Index, gather, true)      \
  X(Index, scatter_add, true) \
  X(Index, index_select, true)

// Products with weights stored as GGML blocks (quant.h): qmatmul is
// x @ W^T with W a u8 [N, row_bytes] of blocks (several W sharing x in one
// call), dequantize decodes them, qembedding decodes the rows of some ids
// (ggml's get_rows), quantize encodes f32 rows as blocks.
#define NASCENT_QUANT_OPS(X)  \
  X(Quant, qmatmul, false)    \
  X(Quant, dequantize, false) \
  X(Quant, qembedding, false) \
  X(Quant, quantize, false)

// The transformer's building blocks, as MLX's fast:: ops and ggml's
// rope_ext / flash_attn_ext: each has a composed default in core (built
// from the ops above, core/ops/rope.cpp, attention.cpp, glu.cpp) that a
// backend without its own kernel runs, and a fused kernel where a backend
// has one.
#define NASCENT_ROPE_OPS(X) X(Rope, rope, true)

#define NASCENT_ATTENTION_OPS(X) X(Attention, attention, true)

#define NASCENT_GLU_OPS(X) \
  X(Glu, swiglu, true)     \
  X(Glu, geglu, true)

// Fused optimizer updates, in place (optim/ builds SGD and Adam on them).
#define NASCENT_OPTIM_OPS(X)  \
  X(Optim, sgd_update, false) \
  X(Optim, adam_update, false)

// clang-format off (it does not settle on one layout for this macro)
#define NASCENT_ALL_OPS(X) \
  NASCENT_CREATION_OPS(X)  \
  NASCENT_RANDOM_OPS(X)    \
  NASCENT_COPY_OPS(X)      \
  NASCENT_UNARY_OPS(X)     \
  NASCENT_BINARY_OPS(X)    \
  NASCENT_WHERE_OPS(X)     \
  NASCENT_REDUCE_OPS(X)    \
  NASCENT_SCAN_OPS(X)      \
  NASCENT_MATMUL_OPS(X)    \
  NASCENT_CONV_OPS(X)      \
  NASCENT_POOL_OPS(X)      \
  NASCENT_SOFTMAX_OPS(X)   \
  NASCENT_NORM_OPS(X)      \
  NASCENT_INDEX_OPS(X)     \
  NASCENT_QUANT_OPS(X)     \
  NASCENT_OPTIM_OPS(X)     \
  NASCENT_ROPE_OPS(X)      \
  NASCENT_ATTENTION_OPS(X) \
  NASCENT_GLU_OPS(X)
// clang-format on

#define NASCENT_OP_ENUMERATOR(family, name, differentiable) name,

enum class OpFamily : uint8_t {
  Creation,
  Random,
  Copy,
  Unary,
  Binary,
  Where,
  Reduce,
  Scan,
  Matmul,
  Conv,
  Pool,
  Softmax,
  Norm,
  Index,
  Quant,
  Optim,
  Rope,
  Attention,
  Glu
};

enum class Op : uint16_t { NASCENT_ALL_OPS(NASCENT_OP_ENUMERATOR) };
enum class CreationOp : uint8_t { NASCENT_CREATION_OPS(NASCENT_OP_ENUMERATOR) };
enum class RandomOp : uint8_t { NASCENT_RANDOM_OPS(NASCENT_OP_ENUMERATOR) };
enum class UnaryOp : uint8_t { NASCENT_UNARY_OPS(NASCENT_OP_ENUMERATOR) };
enum class BinaryOp : uint8_t { NASCENT_BINARY_OPS(NASCENT_OP_ENUMERATOR) };
enum class ReduceOp : uint8_t { NASCENT_REDUCE_OPS(NASCENT_OP_ENUMERATOR) };
enum class ScanOp : uint8_t { NASCENT_SCAN_OPS(NASCENT_OP_ENUMERATOR) };
enum class ConvOp : uint8_t { NASCENT_CONV_OPS(NASCENT_OP_ENUMERATOR) };
enum class PoolOp : uint8_t { NASCENT_POOL_OPS(NASCENT_OP_ENUMERATOR) };
enum class SoftmaxOp : uint8_t { NASCENT_SOFTMAX_OPS(NASCENT_OP_ENUMERATOR) };
enum class NormOp : uint8_t { NASCENT_NORM_OPS(NASCENT_OP_ENUMERATOR) };
enum class IndexOp : uint8_t { NASCENT_INDEX_OPS(NASCENT_OP_ENUMERATOR) };
enum class QuantOp : uint8_t { NASCENT_QUANT_OPS(NASCENT_OP_ENUMERATOR) };
enum class OptimOp : uint8_t { NASCENT_OPTIM_OPS(NASCENT_OP_ENUMERATOR) };
enum class RopeOp : uint8_t { NASCENT_ROPE_OPS(NASCENT_OP_ENUMERATOR) };
enum class AttentionOp : uint8_t {
  NASCENT_ATTENTION_OPS(NASCENT_OP_ENUMERATOR)
};
enum class GluOp : uint8_t { NASCENT_GLU_OPS(NASCENT_OP_ENUMERATOR) };

#define NASCENT_OP_COUNTER(family, name, differentiable) +1
inline constexpr int kNumOps = 0 NASCENT_ALL_OPS(NASCENT_OP_COUNTER);
inline constexpr int kNumUnaryOps = 0 NASCENT_UNARY_OPS(NASCENT_OP_COUNTER);
inline constexpr int kNumBinaryOps = 0 NASCENT_BINARY_OPS(NASCENT_OP_COUNTER);
inline constexpr int kNumReduceOps = 0 NASCENT_REDUCE_OPS(NASCENT_OP_COUNTER);

// Properties of the element-wise unary ops, in one place for the
// front-end's dtype rules (ops/unary.cpp), the CPU's task sizes and the
// CUDA cross-check's tolerances. The switch names every op (no default), so
// an op added to NASCENT_UNARY_OPS fails to compile until it says.
enum class UnaryDomain : uint8_t {
  real,      // Needs real numbers: integers and bool are taken as f32.
  numeric,   // Any number type keeps its dtype; bool is refused.
  rounding,  // floor/ceil/round: integers pass through unchanged.
  logical,   // Any dtype, read as bool.
};
struct UnaryTraits {
  UnaryDomain domain;
  bool exact;  // IEEE-exact (or a selection): backends agree bit for bit.
  bool cheap;  // A few instructions per element (not exp, erf, ...).
};
constexpr UnaryTraits traits(UnaryOp op) {
  using D = UnaryDomain;
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::relu:
    case UnaryOp::square:
    case UnaryOp::clamp:
      return {D::numeric, true, true};
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
      return {D::rounding, true, true};
    case UnaryOp::logical_not:
      return {D::logical, true, true};
    case UnaryOp::sqrt:
    case UnaryOp::reciprocal:
      return {D::real, true, true};
    case UnaryOp::rsqrt:
      return {D::real, false, true};
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::log1p:
    case UnaryOp::expm1:
    case UnaryOp::sin:
    case UnaryOp::cos:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
    case UnaryOp::gelu:
    case UnaryOp::gelu_tanh:
    case UnaryOp::silu:
    case UnaryOp::erf:
    case UnaryOp::pow_scalar:
      return {D::real, false, false};
  }
  return {D::real, false, false};
}

struct OpInfo {
  Op op;
  OpFamily family;
  const char* name;
  bool differentiable;
};

const std::array<OpInfo, kNumOps>& op_table();
const OpInfo& info(Op op);
const char* name(Op op);
const char* name(OpFamily family);

// The table-wide op of a family op, e.g. op_of(UnaryOp::exp) == Op::exp.
Op op_of(CreationOp op);
Op op_of(RandomOp op);
Op op_of(UnaryOp op);
Op op_of(BinaryOp op);
Op op_of(ReduceOp op);
Op op_of(ScanOp op);
Op op_of(ConvOp op);
Op op_of(PoolOp op);
Op op_of(SoftmaxOp op);
Op op_of(NormOp op);
Op op_of(IndexOp op);
Op op_of(QuantOp op);
Op op_of(OptimOp op);
Op op_of(RopeOp op);
Op op_of(AttentionOp op);
Op op_of(GluOp op);
template <class FamilyOp>
const char* name(FamilyOp op) {
  return name(op_of(op));
}

}  // namespace nascent
