// Element-wise binary kernels and where. Float runs that are contiguous or
// a broadcast scalar go to the SIMD kernels (binary_simd.cpp); the scalar
// loops cover strided runs, integers, bool and pow.
#include <cmath>
#include <cstring>

#include "nascent/backends/cpu/elementwise.h"
#include "nascent/backends/cpu/simd/runs.h"

namespace nascent::cpu {

namespace {

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  using C = compute_t<T>;
  const bool has_simd = simd::has_binary(op, dtype_of<T>);
  const BinaryRun vector_run = [&](const void* pa, int64_t sa, const void* pb,
                                   int64_t sb, void* d, int64_t n) {
    simd::binary(op, dtype_of<T>, pa, sa, pb, sb, d, n);
  };
  const BinaryRun* v = has_simd ? &vector_run : nullptr;
  auto arith = [&](auto fn) { map_binary<T, T>(a, b, out, fn, v); };
  auto compare = [&](auto fn) { map_binary<T, bool>(a, b, out, fn, v); };
  switch (op) {
    case BinaryOp::eq:
      return compare([](C x, C y) { return x == y; });
    case BinaryOp::ne:
      return compare([](C x, C y) { return x != y; });
    case BinaryOp::lt:
      return compare([](C x, C y) { return x < y; });
    case BinaryOp::le:
      return compare([](C x, C y) { return x <= y; });
    case BinaryOp::gt:
      return compare([](C x, C y) { return x > y; });
    case BinaryOp::ge:
      return compare([](C x, C y) { return x >= y; });
    case BinaryOp::logical_and:
      return compare([](C x, C y) { return bool(x) && bool(y); });
    case BinaryOp::logical_or:
      return compare([](C x, C y) { return bool(x) || bool(y); });
    case BinaryOp::logical_xor:
      return compare([](C x, C y) { return bool(x) != bool(y); });
    case BinaryOp::add:
    case BinaryOp::sub:
    case BinaryOp::mul:
    case BinaryOp::div:
    case BinaryOp::pow:
    case BinaryOp::maximum:
    case BinaryOp::minimum:
      break;
  }
  if constexpr (!std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::add:
        return arith([](C x, C y) { return wrap_add(x, y); });
      case BinaryOp::sub:
        return arith([](C x, C y) { return wrap_sub(x, y); });
      case BinaryOp::mul:
        return arith([](C x, C y) { return wrap_mul(x, y); });
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
      case BinaryOp::div:
      case BinaryOp::pow:
      case BinaryOp::eq:
      case BinaryOp::ne:
      case BinaryOp::lt:
      case BinaryOp::le:
      case BinaryOp::gt:
      case BinaryOp::ge:
      case BinaryOp::logical_and:
      case BinaryOp::logical_or:
      case BinaryOp::logical_xor:
        break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case BinaryOp::div:
          return arith([](C x, C y) { return x / y; });
        case BinaryOp::pow:
          // In double, so that f32 results are rounded once.
          return arith(
              [](C x, C y) { return C(std::pow(double(x), double(y))); });
        case BinaryOp::add:
        case BinaryOp::sub:
        case BinaryOp::mul:
        case BinaryOp::maximum:
        case BinaryOp::minimum:
        case BinaryOp::eq:
        case BinaryOp::ne:
        case BinaryOp::lt:
        case BinaryOp::le:
        case BinaryOp::gt:
        case BinaryOp::ge:
        case BinaryOp::logical_and:
        case BinaryOp::logical_or:
        case BinaryOp::logical_xor:
          break;
      }
    }
  }
  throw BackendError(
      fmt::format("cpu: {} does not take {}", name(op), a.to_string()));
}

// where on elements of U's size with any strides.
template <class U, class Strides>
void where_strided(const bool* c, const std::byte* a, const std::byte* b,
                   std::byte* out, int64_t n, const Strides& st) {
  const U* pa = reinterpret_cast<const U*>(a);
  const U* pb = reinterpret_cast<const U*>(b);
  U* po = reinterpret_cast<U*>(out);
  for (int64_t i = 0; i < n; ++i) {
    po[i * st[0]] = c[i * st[1]] ? pa[i * st[2]] : pb[i * st[3]];
  }
}

}  // namespace

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                     Tensor& out) {
  dispatch_dtype(a.dtype(),
                 [&](auto tag) { binary_typed<decltype(tag)>(op, a, b, out); });
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    Tensor& out) {
  StridedLoop<4> loop(
      out.shape(), {out.strides(), cond.strides(), a.strides(), b.strides()});
  const size_t size = out.itemsize();
  std::byte* dst = byte_ptr(out);
  const bool* pc = data_ptr<bool>(cond);
  const std::byte* pa = byte_ptr(a);
  const std::byte* pb = byte_ptr(b);
  // A selection copies bytes, so the dtype only matters for its size.
  loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
    std::byte* d = dst + off[0] * int64_t(size);
    const bool* c = pc + off[1];
    const std::byte* sa = pa + off[2] * int64_t(size);
    const std::byte* sb = pb + off[3] * int64_t(size);
    if (st[0] == 1 && st[1] == 1 && (st[2] == 0 || st[2] == 1) &&
        (st[3] == 0 || st[3] == 1)) {
      return simd::where(size, c, sa, st[2], sb, st[3], d, n);
    }
    switch (size) {
      case 1:
        return where_strided<uint8_t>(c, sa, sb, d, n, st);
      case 2:
        return where_strided<uint16_t>(c, sa, sb, d, n, st);
      case 4:
        return where_strided<uint32_t>(c, sa, sb, d, n, st);
      default:
        return where_strided<uint64_t>(c, sa, sb, d, n, st);
    }
  });
}

}  // namespace nascent::cpu
