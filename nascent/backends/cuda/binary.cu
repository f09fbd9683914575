// Element-wise binary ops and where, with the CPU backend's semantics
// (cpu/binary.cpp): f16 and bf16 compute in float, integers wrap, maximum
// and minimum propagate NaN, pow runs in double and rounds once.
#include <cmath>

#include "nascent/backends/cuda/elementwise.cuh"

namespace nascent::cuda {

namespace {

struct Add {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    return wrap_add(x, y);
  }
};
struct Sub {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    return wrap_sub(x, y);
  }
};
struct Mul {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    return wrap_mul(x, y);
  }
};
struct Div {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    return x / y;
  }
};
struct Pow {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    return C(::pow(double(x), double(y)));
  }
};
struct Maximum {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (x != x || y != y) return x + y;
    }
    return x > y ? x : y;
  }
};
struct Minimum {
  template <class C>
  NASCENT_D C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (x != x || y != y) return x + y;
    }
    return x < y ? x : y;
  }
};

#define NASCENT_COMPARE(Name, expr)             \
  struct Name {                                 \
    template <class C>                          \
    NASCENT_D bool operator()(C x, C y) const { \
      return expr;                              \
    }                                           \
  };
NASCENT_COMPARE(Eq, x == y)
NASCENT_COMPARE(Ne, x != y)
NASCENT_COMPARE(Lt, x < y)
NASCENT_COMPARE(Le, x <= y)
NASCENT_COMPARE(Gt, x > y)
NASCENT_COMPARE(Ge, x >= y)
NASCENT_COMPARE(LogicalAnd, bool(x) && bool(y))
NASCENT_COMPARE(LogicalOr, bool(x) || bool(y))
NASCENT_COMPARE(LogicalXor, bool(x) != bool(y))
#undef NASCENT_COMPARE

// Storage T in, O out (T, or bool for comparisons); F on the compute type.
template <class T, class O, class F>
struct OnCompute {
  F f;
  NASCENT_D O operator()(T a, T b) const {
    using C = compute_t<T>;
    return convert<O>(f(convert<C>(a), convert<C>(b)));
  }
};

template <class T, class O, class F>
void run(Context& ctx, BinaryOp op, const Tensor& a, const Tensor& b,
         Tensor& out, F f) {
  map2<T, O>(ctx, nascent::name(op), a, b, out, OnCompute<T, O, F>{f});
}

template <class T>
bool binary_typed(Context& ctx, BinaryOp op, const Tensor& a, const Tensor& b,
                  Tensor& out) {
  switch (op) {
    case BinaryOp::eq:
      return run<T, bool>(ctx, op, a, b, out, Eq{}), true;
    case BinaryOp::ne:
      return run<T, bool>(ctx, op, a, b, out, Ne{}), true;
    case BinaryOp::lt:
      return run<T, bool>(ctx, op, a, b, out, Lt{}), true;
    case BinaryOp::le:
      return run<T, bool>(ctx, op, a, b, out, Le{}), true;
    case BinaryOp::gt:
      return run<T, bool>(ctx, op, a, b, out, Gt{}), true;
    case BinaryOp::ge:
      return run<T, bool>(ctx, op, a, b, out, Ge{}), true;
    default:
      break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::logical_and:
        return run<T, bool>(ctx, op, a, b, out, LogicalAnd{}), true;
      case BinaryOp::logical_or:
        return run<T, bool>(ctx, op, a, b, out, LogicalOr{}), true;
      case BinaryOp::logical_xor:
        return run<T, bool>(ctx, op, a, b, out, LogicalXor{}), true;
      default:
        return false;
    }
  } else {
    switch (op) {
      case BinaryOp::add:
        return run<T, T>(ctx, op, a, b, out, Add{}), true;
      case BinaryOp::sub:
        return run<T, T>(ctx, op, a, b, out, Sub{}), true;
      case BinaryOp::mul:
        return run<T, T>(ctx, op, a, b, out, Mul{}), true;
      case BinaryOp::maximum:
        return run<T, T>(ctx, op, a, b, out, Maximum{}), true;
      case BinaryOp::minimum:
        return run<T, T>(ctx, op, a, b, out, Minimum{}), true;
      default:
        break;
    }
    if constexpr (is_float_v<T>) {
      switch (op) {
        case BinaryOp::div:
          return run<T, T>(ctx, op, a, b, out, Div{}), true;
        case BinaryOp::pow:
          return run<T, T>(ctx, op, a, b, out, Pow{}), true;
        default:
          break;
      }
    }
    return false;
  }
}

// --- where -------------------------------------------------------------------

// A selection moves bytes: one kernel per element size.
template <int V, class U>
__global__ void __launch_bounds__(kThreads)
    where_flat(const bool* c, const U* a, const U* b, U* y, int64_t n,
               bool a_scalar, bool b_scalar) {
  using VC = Vec<bool, V>;
  using VU = Vec<U, V>;
  const int64_t nvec = n / V;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < nvec;
       i += int64_t(gridDim.x) * kThreads) {
    const VC vc = reinterpret_cast<const VC*>(c)[i];
    VU va, vb, out;
    if (!a_scalar) va = reinterpret_cast<const VU*>(a)[i];
    if (!b_scalar) vb = reinterpret_cast<const VU*>(b)[i];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      out.v[k] =
          vc.v[k] ? (a_scalar ? a[0] : va.v[k]) : (b_scalar ? b[0] : vb.v[k]);
    }
    reinterpret_cast<VU*>(y)[i] = out;
  }
  const int64_t t = nvec * V + int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (blockIdx.x == 0 && t < n) {
    y[t] = c[t] ? a[a_scalar ? 0 : t] : b[b_scalar ? 0 : t];
  }
}

template <class U>
__global__ void __launch_bounds__(kThreads)
    where_strided(const bool* c, const U* a, const U* b, U* y,
                  StridedParams<4> p, uint32_t n) {
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n;
       i += gridDim.x * kThreads) {
    int64_t off[4];
    strided_offsets(p, i, off);
    y[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  }
}

template <class U>
void where_sized(Context& ctx, const Tensor& cond, const Tensor& a,
                 const Tensor& b, Tensor& out) {
  const bool* pc = data_ptr<bool>(cond);
  const U* pa = data_ptr<U>(a);
  const U* pb = data_ptr<U>(b);
  U* py = data_ptr<U>(out);
  Collapsed<4> c = collapse<4>(out.shape(), {&out.strides(), &cond.strides(),
                                             &a.strides(), &b.strides()});
  // Vectors of 4 (cond loads 4 bytes, values up to 32).
  constexpr int V = 4;
  if (c.flat({false, false, true, true})) {
    const bool sa = c.strides[2][0] == 0, sb = c.strides[3][0] == 0;
    const auto ok = [](const void* p, size_t bytes) {
      return reinterpret_cast<uintptr_t>(p) % bytes == 0;
    };
    if (ok(py, V * sizeof(U)) && ok(pc, V) && (sa || ok(pa, V * sizeof(U))) &&
        (sb || ok(pb, V * sizeof(U)))) {
      const int64_t n = c.shape[0];
      where_flat<V><<<grid_for(n / V + 1, kThreads), kThreads, 0, ctx.stream>>>(
          pc, pa, pb, py, n, sa, sb);
      check_launch("where");
      return;
    }
  }
  for_each_launch<
      4>(c, {0, 0, 0, 0}, [&](const StridedParams<4>& p, auto o, int64_t n) {
    where_strided<<<grid_for(n, kThreads, 65536), kThreads, 0, ctx.stream>>>(
        pc + o[1], pa + o[2], pb + o[3], py + o[0], p, uint32_t(n));
    check_launch("where");
  });
}

}  // namespace

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                     Tensor& out) {
  DeviceGuard guard(ctx_->device);
  const bool done = dispatch(a.dtype(), [&](auto tag) {
    return binary_typed<decltype(tag)>(*ctx_, op, a, b, out);
  });
  if (!done) {
    unsupported(nascent::name(op), a);
  }
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    Tensor& out) {
  DeviceGuard guard(ctx_->device);
  if (out.numel() == 0) return;
  switch (out.itemsize()) {
    case 1:
      return where_sized<uint8_t>(*ctx_, cond, a, b, out);
    case 2:
      return where_sized<uint16_t>(*ctx_, cond, a, b, out);
    case 4:
      return where_sized<uint32_t>(*ctx_, cond, a, b, out);
    default:
      return where_sized<uint64_t>(*ctx_, cond, a, b, out);
  }
}

}  // namespace nascent::cuda
