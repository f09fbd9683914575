// Element-wise binary kernels and where.
#include <cmath>

#include "nascent/backends/cpu/elementwise.h"

namespace nascent::cpu {

namespace {

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b,
                  Tensor& out) {
  using C = compute_t<T>;
  auto arith = [&](auto fn) { map_binary<T, T>(a, b, out, fn); };
  auto compare = [&](auto fn) { map_binary<T, bool>(a, b, out, fn); };
  switch (op) {
    case BinaryOp::eq: return compare([](C x, C y) { return x == y; });
    case BinaryOp::ne: return compare([](C x, C y) { return x != y; });
    case BinaryOp::lt: return compare([](C x, C y) { return x < y; });
    case BinaryOp::le: return compare([](C x, C y) { return x <= y; });
    case BinaryOp::gt: return compare([](C x, C y) { return x > y; });
    case BinaryOp::ge: return compare([](C x, C y) { return x >= y; });
    case BinaryOp::logical_and:
      return compare([](C x, C y) { return bool(x) && bool(y); });
    case BinaryOp::logical_or:
      return compare([](C x, C y) { return bool(x) || bool(y); });
    case BinaryOp::logical_xor:
      return compare([](C x, C y) { return bool(x) != bool(y); });
    default: break;
  }
  if constexpr (!std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::add: return arith([](C x, C y) { return C(x + y); });
      case BinaryOp::sub: return arith([](C x, C y) { return C(x - y); });
      case BinaryOp::mul: return arith([](C x, C y) { return C(x * y); });
      case BinaryOp::maximum:
        return arith([](C x, C y) {
          if constexpr (std::is_floating_point_v<C>) {
            if (x != x || y != y) return x + y;  // NaN propagates.
          }
          return x > y ? x : y;
        });
      case BinaryOp::minimum:
        return arith([](C x, C y) {
          if constexpr (std::is_floating_point_v<C>) {
            if (x != x || y != y) return x + y;
          }
          return x < y ? x : y;
        });
      default: break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case BinaryOp::div: return arith([](C x, C y) { return x / y; });
        case BinaryOp::pow:
          return arith([](C x, C y) { return std::pow(x, y); });
        default: break;
      }
    }
  }
  throw BackendError(fmt::format("cpu: {} does not take {}", name(op),
                                 a.to_string()));
}

}  // namespace

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                     Tensor& out) {
  dispatch_dtype(a.dtype(), [&](auto tag) {
    binary_typed<decltype(tag)>(op, a, b, out);
  });
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    StridedLoop<4> loop(out.shape(), {out.strides(), cond.strides(),
                                      a.strides(), b.strides()});
    T* dst = data_ptr<T>(out);
    const bool* pc = data_ptr<bool>(cond);
    const T* pa = data_ptr<T>(a);
    const T* pb = data_ptr<T>(b);
    loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) {
        dst[off[0] + i * st[0]] = pc[off[1] + i * st[1]]
                                      ? pa[off[2] + i * st[2]]
                                      : pb[off[3] + i * st[3]];
      }
    });
  });
}

}  // namespace nascent::cpu
