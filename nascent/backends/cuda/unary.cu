// Element-wise unary ops with the CPU backend's semantics (cpu/unary.cpp):
// f16 and bf16 compute in float and round once; integer arithmetic wraps.
// Transcendentals of f32, f16 and bf16 are computed in double and rounded
// once, as the CPU's scalar path does (CUDA's float versions are up to 2 ulp
// off, the conformance bounds are tighter). gelu, the one an element-wise
// benchmark runs, is computed in float with the CPU's SIMD formula: double
// erfc would make it compute-bound on the H200 (see bench/NOTES.md).
// glu (swiglu, geglu) lives here too: its activation and product in one
// pass.
#include <cmath>

#include "nascent/backends/cuda/elementwise.cuh"

namespace nascent::cuda {

namespace {

// f(x) in double, for every C: the CPU's "math in double, round once".
#define NASCENT_DOUBLE_OP(Name, expr)   \
  struct Name {                         \
    template <class C>                  \
    NASCENT_D C operator()(C c) const { \
      const double v = double(c);       \
      return C(expr);                   \
    }                                   \
  };

NASCENT_DOUBLE_OP(Exp, ::exp(v))
NASCENT_DOUBLE_OP(Log, ::log(v))
NASCENT_DOUBLE_OP(Log1p, ::log1p(v))
NASCENT_DOUBLE_OP(Expm1, ::expm1(v))
NASCENT_DOUBLE_OP(Rsqrt, 1.0 / ::sqrt(v))
NASCENT_DOUBLE_OP(Sin, ::sin(v))
NASCENT_DOUBLE_OP(Cos, ::cos(v))
NASCENT_DOUBLE_OP(Tanh, ::tanh(v))
NASCENT_DOUBLE_OP(Sigmoid, 1.0 / (1.0 + ::exp(-v)))
NASCENT_DOUBLE_OP(Erf, ::erf(v))
// 0.5 x (1 + tanh(u)) written as x * sigmoid(2u), and x * sigmoid(x): no
// cancellation for negative x; the limit 0 at -inf.
NASCENT_DOUBLE_OP(GeluTanh,
                  v == -INFINITY
                      ? 0.0
                      : v / (1.0 + ::exp(-2.0 * 0.79788456080286535588 *
                                         (v + 0.044715 * v * v * v))))
NASCENT_DOUBLE_OP(Silu, v == -INFINITY ? 0.0 : v / (1.0 + ::exp(-v)))
#undef NASCENT_DOUBLE_OP

// e^x and 1/x from the special-function unit, flushing subnormals: for
// f16 and bf16 results, whose rounding dwarfs their error.
NASCENT_D float fast_exp(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896341f));
  return r;
}
NASCENT_D float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// erfc(z) for z >= 0 with z^2 = hi + lo: the CPU's rational fit (relative
// error 6e-9 on [0, 10]) times e^-(hi + lo) = e^-hi (1 - lo).
template <bool kFast>
NASCENT_D float erfc_positive(float z, float hi, float lo) {
  const float p =
      fmaf(fmaf(fmaf(fmaf(0.0327099003f, z, 0.228806391f), z, 0.730739176f), z,
                1.23758483f),
           z, 1.0f);
  const float q =
      fmaf(fmaf(fmaf(fmaf(fmaf(0.0579760745f, z, 0.405575573f), z, 1.32375383f),
                     z, 2.40043521f),
                z, 2.36596465f),
           z, 1.0f);
  if constexpr (kFast) {
    const float e = fast_exp(-hi);
    return p * fast_rcp(q) * fmaf(-lo, e, e);
  } else {
    const float e = expf(-hi);
    return (p / q) * fmaf(-lo, e, e);
  }
}

// gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, with x^2 / 2 formed
// exactly (cpu/simd/math-inl.h, Gelu).
template <bool kFast>
struct Gelu {
  NASCENT_D float operator()(float x) const {
    if (x != x) return x;
    const float a = fminf(fabsf(x), 16.0f);
    const float hi = a * a;
    const float lo = fmaf(a, a, -hi);
    const float z = a * 0.707106781f;
    const float c = 0.5f * erfc_positive<kFast>(z, hi * 0.5f, lo * 0.5f);
    const float r = x * (x < 0.0f ? c : 1.0f - c);
    return x == -INFINITY ? 0.0f : r;  // The limit, not -inf * 0.
  }
  NASCENT_D double operator()(double x) const {
    if (x == -INFINITY) return 0.0;
    return 0.5 * x * ::erfc(-x * 0.70710678118654752440);
  }
};

// gelu straight from and to f16 or bf16 storage, for the element-wise
// benchmark's sake (it is bound by instructions, not bytes, otherwise): the
// special-function unit's exp and reciprocal, no exact x^2 (its rounding is
// far below the result's), the hardware's rounding to the storage type
// (NaN comes out of the arithmetic, as a canonical NaN).
template <class T>
struct GeluHalf {
  NASCENT_D T operator()(T v) const {
    const float x = half_to_float(v);
    const float a = fminf(fabsf(x), 16.0f);
    const float z = a * 0.707106781f;
    // erfc_positive's numerator halved (the exact halves of its
    // coefficients), so c = erfc(z) / 2 costs no multiply by 1/2: the same
    // bits for every f16 and bf16 input, one instruction less an element.
    const float p =
        fmaf(fmaf(fmaf(fmaf(0.01635495015f, z, 0.1144031955f), z, 0.365369588f),
                  z, 0.618792415f),
             z, 0.5f);
    const float q = fmaf(
        fmaf(fmaf(fmaf(fmaf(0.0579760745f, z, 0.405575573f), z, 1.32375383f), z,
                  2.40043521f),
             z, 2.36596465f),
        z, 1.0f);
    const float c = p * fast_rcp(q) * fast_exp(-z * z);
    float r = x * (x < 0.0f ? c : 1.0f - c);
    if (x == -INFINITY) r = 0.0f;
    if constexpr (std::is_same_v<T, bfloat16>) {
      return {__bfloat16_as_ushort(__float2bfloat16_rn(r))};
    } else {
      return {__half_as_ushort(__float2half_rn(r))};
    }
  }
};

struct Neg {
  template <class C>
  NASCENT_D C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) {
      return -v;  // neg(+0) is -0.
    } else {
      return wrap_sub(C(0), v);
    }
  }
};
struct Abs {
  template <class C>
  NASCENT_D C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) {
      return fabs(v);
    } else {
      return v < C(0) ? wrap_sub(C(0), v) : v;
    }
  }
};
struct Sign {
  template <class C>
  NASCENT_D C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (v != v) return v;
    }
    return C((C(0) < v) - (v < C(0)));
  }
};
struct Relu {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return v < C(0) ? C(0) : v;
  }
};
struct Square {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return wrap_mul(v, v);
  }
};
struct Clamp {
  double lo, hi;
  template <class C>
  NASCENT_D C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (v != v) return v;
    }
    const double d = double(v);
    return d < lo ? from_f64<C>(lo) : d > hi ? from_f64<C>(hi) : v;
  }
};
struct Sqrt {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return sqrt(v);
  }
};
struct Floor {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return floor(v);
  }
};
struct Ceil {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return ceil(v);
  }
};
struct Round {  // Half to even, as PyTorch.
  template <class C>
  NASCENT_D C operator()(C v) const {
    return rint(v);
  }
};
struct Reciprocal {
  template <class C>
  NASCENT_D C operator()(C v) const {
    return C(1) / v;
  }
};
struct PowScalar {
  double e;
  template <class C>
  NASCENT_D C operator()(C v) const {
    return C(::pow(double(v), e));
  }
};
struct LogicalNot {
  NASCENT_D bool operator()(bool v) const { return !v; }
};

// Storage T in and out, F on the compute type between.
template <class T, class F>
struct OnCompute {
  F f;
  NASCENT_D T operator()(T v) const {
    return convert<T>(f(convert<compute_t<T>>(v)));
  }
};

template <class T, class F>
void run(Context& ctx, UnaryOp op, const Tensor& x, Tensor& out, F f) {
  map1<T, T>(ctx, nascent::name(op), x, out, OnCompute<T, F>{f});
}

template <class T>
bool unary_numeric(Context& ctx, UnaryOp op, const Tensor& x,
                   const UnaryParams& p, Tensor& out) {
  switch (op) {
    case UnaryOp::neg:
      return run<T>(ctx, op, x, out, Neg{}), true;
    case UnaryOp::abs:
      return run<T>(ctx, op, x, out, Abs{}), true;
    case UnaryOp::sign:
      return run<T>(ctx, op, x, out, Sign{}), true;
    case UnaryOp::relu:
      return run<T>(ctx, op, x, out, Relu{}), true;
    case UnaryOp::square:
      return run<T>(ctx, op, x, out, Square{}), true;
    case UnaryOp::clamp:
      return run<T>(ctx, op, x, out, Clamp{p.a, p.b}), true;
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::log1p:
    case UnaryOp::expm1:
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::sin:
    case UnaryOp::cos:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
    case UnaryOp::gelu:
    case UnaryOp::gelu_tanh:
    case UnaryOp::silu:
    case UnaryOp::erf:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::reciprocal:
    case UnaryOp::pow_scalar:
    case UnaryOp::logical_not:
      return false;
  }
  return false;
}

template <class T>
bool unary_float(Context& ctx, UnaryOp op, const Tensor& x,
                 const UnaryParams& p, Tensor& out) {
  switch (op) {
    case UnaryOp::exp:
      return run<T>(ctx, op, x, out, Exp{}), true;
    case UnaryOp::log:
      return run<T>(ctx, op, x, out, Log{}), true;
    case UnaryOp::log1p:
      return run<T>(ctx, op, x, out, Log1p{}), true;
    case UnaryOp::expm1:
      return run<T>(ctx, op, x, out, Expm1{}), true;
    case UnaryOp::sqrt:
      return run<T>(ctx, op, x, out, Sqrt{}), true;
    case UnaryOp::rsqrt:
      return run<T>(ctx, op, x, out, Rsqrt{}), true;
    case UnaryOp::sin:
      return run<T>(ctx, op, x, out, Sin{}), true;
    case UnaryOp::cos:
      return run<T>(ctx, op, x, out, Cos{}), true;
    case UnaryOp::tanh:
      return run<T>(ctx, op, x, out, Tanh{}), true;
    case UnaryOp::sigmoid:
      return run<T>(ctx, op, x, out, Sigmoid{}), true;
    case UnaryOp::gelu:
      if constexpr (is_half_v<T>) {
        map1<T, T>(ctx, nascent::name(op), x, out, GeluHalf<T>{});
        return true;
      } else {
        return run<T>(ctx, op, x, out, Gelu<false>{}), true;
      }
    case UnaryOp::gelu_tanh:
      return run<T>(ctx, op, x, out, GeluTanh{}), true;
    case UnaryOp::silu:
      return run<T>(ctx, op, x, out, Silu{}), true;
    case UnaryOp::erf:
      return run<T>(ctx, op, x, out, Erf{}), true;
    case UnaryOp::floor:
      return run<T>(ctx, op, x, out, Floor{}), true;
    case UnaryOp::ceil:
      return run<T>(ctx, op, x, out, Ceil{}), true;
    case UnaryOp::round:
      return run<T>(ctx, op, x, out, Round{}), true;
    case UnaryOp::reciprocal:
      return run<T>(ctx, op, x, out, Reciprocal{}), true;
    case UnaryOp::pow_scalar:
      return run<T>(ctx, op, x, out, PowScalar{p.a}), true;
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::relu:
    case UnaryOp::square:
    case UnaryOp::clamp:
    case UnaryOp::logical_not:
      return unary_numeric<T>(ctx, op, x, p, out);
  }
  return false;
}

// glu's act(gate) * up: the activation rounded to T, then the product
// rounded, as the composed default's two ops round.
template <class T, class Act>
struct GluProduct {
  Act act;
  NASCENT_D T operator()(T gate, T up) const {
    using C = compute_t<T>;
    const T a = convert<T>(act(convert<C>(gate)));
    return convert<T>(convert<C>(a) * convert<C>(up));
  }
};

// glu over contiguous, aligned operands: one element a thread, since the
// double activation is long and a decoding step's rows are short (the
// flat map's few threads, each looping over many elements, wait on it).
template <class T, class F>
__global__ void glu_flat(const T* gate, const T* up, T* y, int64_t n, F f) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f(gate[i], up[i]);
}

template <class T, class F>
void run_glu(Context& ctx, const char* op, const Tensor& gate, const Tensor& up,
             Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (gate.is_contiguous() && up.is_contiguous() && n <= (int64_t(1) << 30)) {
    constexpr int kThreads = 128;
    glu_flat<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0,
               ctx.stream>>>(data_ptr<T>(gate), data_ptr<T>(up),
                             data_ptr<T>(out), n, f);
    check_launch(op);
    return;
  }
  map2<T, T>(ctx, op, gate, up, out, f);
}

}  // namespace

void Backend::glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  const bool done = dispatch(gate.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      if (op == GluOp::swiglu) {
        run_glu<T>(ctx, "swiglu", gate, up, out, GluProduct<T, Silu>{});
      } else {
        run_glu<T>(ctx, "geglu", gate, up, out, GluProduct<T, GeluTanh>{});
      }
      return true;
    } else {
      return false;
    }
  });
  if (!done) nascent::Backend::glu(op, gate, up, out);
}

void Backend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                    Tensor& out) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  const bool done = dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (op != UnaryOp::logical_not) return false;
      map1<bool, bool>(ctx, nascent::name(op), x, out, LogicalNot{});
      return true;
    } else if constexpr (is_float_v<T>) {
      return unary_float<T>(ctx, op, x, p, out);
    } else {
      return unary_numeric<T>(ctx, op, x, p, out);
    }
  });
  if (!done) {
    unsupported(nascent::name(op), x);
  }
}

}  // namespace nascent::cuda
