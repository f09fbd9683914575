// Element conversions between dtypes, with the same rules as core's
// from_double() (saturating float to integer, NaN to 0) but without going
// through double where a direct path is exact.
#pragma once

#include <cstdint>
#include <type_traits>

#include "nascent/core/dtype.h"

namespace nascent::cpu {

template <class D, class S>
inline D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, float> &&
                       (std::is_same_v<S, float16> ||
                        std::is_same_v<S, bfloat16>)) {
    return to_float(v);
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float16>) {
    return to_float16(v);
  } else if constexpr (std::is_same_v<S, float> &&
                       std::is_same_v<D, bfloat16>) {
    return to_bfloat16(v);
  } else if constexpr (std::is_same_v<D, bool>) {
    return to_double(v) != 0.0;
  } else if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
    return D(v);  // Exact when it fits, else wraps like a C cast (PyTorch).
  } else {
    return from_double<D>(to_double(v));
  }
}

// Converts a contiguous run; kept separate so hot pairs can get SIMD paths.
template <class S, class D>
inline void convert_run(const S* src, D* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i]);
}

}  // namespace nascent::cpu
