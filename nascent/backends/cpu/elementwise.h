// Shared pieces of the element-wise kernels: the compute type of a storage
// type (f16/bf16 compute in float), wrapping integer arithmetic, and the
// strided loops that feed a scalar functor, handing contiguous (and, for
// binary ops, broadcast-scalar) runs to a SIMD kernel when there is one.
#pragma once

#include <functional>
#include <type_traits>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/strided.h"

namespace nascent::cpu {

template <class T>
using compute_t = std::conditional_t<
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// Integer arithmetic wraps, as in PyTorch; signed overflow is undefined in
// C++, so it goes through the unsigned type.
template <class C>
C wrap_add(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) + U(y)));
  } else {
    return x + y;
  }
}
template <class C>
C wrap_sub(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) - U(y)));
  } else {
    return x - y;
  }
}
template <class C>
C wrap_mul(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    // uint8_t would promote to int; unsigned int cannot overflow.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return C(U(W(U(x)) * W(U(y))));
  } else {
    return x * y;
  }
}

// A SIMD kernel for contiguous runs: (x, out, n).
using UnaryRun = std::function<void(const void*, void*, int64_t)>;
// A SIMD kernel for runs with a and b strides of 0 or 1: (a, stride_a, b,
// stride_b, out, n).
using BinaryRun = std::function<void(const void*, int64_t, const void*, int64_t,
                                     void*, int64_t)>;

// out[i] = fn(x[i]) over any strides; T in, O out (compute types between).
// `simd` (may be null) takes the runs where both are contiguous.
template <class T, class O, class Fn>
void map_unary(const Tensor& x, Tensor& out, Fn fn,
               const UnaryRun* simd = nullptr,
               int64_t grain = kElementwiseGrain) {
  StridedLoop<2> loop(out.shape(), {out.strides(), x.strides()});
  O* dst = data_ptr<O>(out);
  const T* src = data_ptr<T>(x);
  loop.parallel(grain, [&](auto off, int64_t n, auto st) {
    O* d = dst + off[0];
    const T* s = src + off[1];
    if (st[0] == 1 && st[1] == 1) {
      if (simd != nullptr) return (*simd)(s, d, n);
      // Unit strides spelled out so the compiler can vectorise.
      for (int64_t i = 0; i < n; ++i) {
        d[i] = convert<O>(fn(convert<compute_t<T>>(s[i])));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      d[i * st[0]] = convert<O>(fn(convert<compute_t<T>>(s[i * st[1]])));
    }
  });
}

// out[i] = fn(a[i], b[i]); a and b are views of out's shape. `simd` (may be
// null) takes the runs where out is contiguous and a and b are contiguous
// or one broadcast value.
template <class T, class O, class Fn>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, Fn fn,
                const BinaryRun* simd = nullptr,
                int64_t grain = kElementwiseGrain) {
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()});
  O* dst = data_ptr<O>(out);
  const T* pa = data_ptr<T>(a);
  const T* pb = data_ptr<T>(b);
  using C = compute_t<T>;
  loop.parallel(grain, [&](auto off, int64_t n, auto st) {
    O* d = dst + off[0];
    const T* sa = pa + off[1];
    const T* sb = pb + off[2];
    const bool unit_or_zero =
        (st[1] == 0 || st[1] == 1) && (st[2] == 0 || st[2] == 1);
    if (simd != nullptr && st[0] == 1 && unit_or_zero) {
      return (*simd)(sa, st[1], sb, st[2], d, n);
    }
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) {
        d[i] = convert<O>(fn(convert<C>(sa[i]), convert<C>(sb[i])));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      d[i * st[0]] =
          convert<O>(fn(convert<C>(sa[i * st[1]]), convert<C>(sb[i * st[2]])));
    }
  });
}

}  // namespace nascent::cpu
