// Shared pieces of the element-wise kernels: the compute type of a storage
// type (f16/bf16 compute in float) and the strided loops that feed a scalar
// functor. SIMD paths plug in for contiguous runs.
#pragma once

#include <type_traits>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/strided.h"

namespace nascent::cpu {

template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, float16> ||
                           std::is_same_v<T, bfloat16>,
                       float, T>;

// out[i] = fn(x[i]) over any strides; T in, O out (compute types in between).
template <class T, class O, class Fn>
void map_unary(const Tensor& x, Tensor& out, Fn fn) {
  StridedLoop<2> loop(out.shape(), {out.strides(), x.strides()});
  O* dst = data_ptr<O>(out);
  const T* src = data_ptr<T>(x);
  loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
    O* d = dst + off[0];
    const T* s = src + off[1];
    for (int64_t i = 0; i < n; ++i) {
      d[i * st[0]] = convert<O>(fn(convert<compute_t<T>>(s[i * st[1]])));
    }
  });
}

// out[i] = fn(a[i], b[i]); a and b are views of out's shape.
template <class T, class O, class Fn>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, Fn fn) {
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()});
  O* dst = data_ptr<O>(out);
  const T* pa = data_ptr<T>(a);
  const T* pb = data_ptr<T>(b);
  using C = compute_t<T>;
  loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
    O* d = dst + off[0];
    const T* sa = pa + off[1];
    const T* sb = pb + off[2];
    for (int64_t i = 0; i < n; ++i) {
      d[i * st[0]] = convert<O>(fn(convert<C>(sa[i * st[1]]),
                                   convert<C>(sb[i * st[2]])));
    }
  });
}

}  // namespace nascent::cpu
