// Device-side helpers every kernel file shares: element conversions with the
// CPU backend's exact rules (convert.h, dtype.h), fast 32-bit division for
// strided indexing, and the dtype dispatch used on the host side.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "nascent/backends/cuda/context.h"
#include "nascent/core/dtype.h"

namespace nascent::cuda {

#define NASCENT_HD __host__ __device__ __forceinline__
#define NASCENT_D __device__ __forceinline__

template <class T>
inline constexpr bool is_half_v =
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic on T runs in: f16 and bf16 compute in float.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// --- f16 / bf16
// ----------------------------------------------------------------

NASCENT_D float half_to_float(float16 h) {
  return __half2float(__ushort_as_half(h.bits));
}
NASCENT_D float half_to_float(bfloat16 b) {
  return __uint_as_float(uint32_t(b.bits) << 16);
}
// Round to nearest even as core's to_float16; NaN keeps its sign and
// becomes the quiet NaN 0x7e00, as on the CPU.
NASCENT_D float16 to_f16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return {uint16_t(((u >> 16) & 0x8000u) | 0x7e00u)};
  }
  return {__half_as_ushort(__float2half_rn(f))};
}
// core's to_bfloat16, bit for bit.
NASCENT_D bfloat16 to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {uint16_t(u >> 16)};
}

// --- Conversions (core's from_double / to_double, cpu::convert) -------------

template <class T>
NASCENT_D double to_f64(T v) {
  if constexpr (is_half_v<T>) {
    return double(half_to_float(v));
  } else {
    return double(v);
  }
}

template <class T>
NASCENT_D T from_f64(double v) {
  if constexpr (std::is_same_v<T, float16>) {
    return to_f16(float(v));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bf16(float(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    // Saturating, NaN to 0: C++ leaves out-of-range conversions undefined.
    if (!(v == v)) return T(0);
    if (v <= double(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    if (v >= double(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return T(v);
  } else {
    return T(v);
  }
}

// cpu::convert: element conversion between any two dtypes.
template <class D, class S>
NASCENT_D D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, float> && is_half_v<S>) {
    return half_to_float(v);
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float16>) {
    return to_f16(v);
  } else if constexpr (std::is_same_v<S, float> &&
                       std::is_same_v<D, bfloat16>) {
    return to_bf16(v);
  } else if constexpr (std::is_same_v<D, bool>) {
    return to_f64(v) != 0.0;
  } else if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
    return D(v);  // Wraps like a C cast, as the CPU.
  } else {
    return from_f64<D>(to_f64(v));
  }
}

// Storage to compute type and back.
template <class T>
NASCENT_D compute_t<T> load_compute(T v) {
  return convert<compute_t<T>>(v);
}

// --- Wrapping integer arithmetic (as cpu/elementwise.h) ---------------------

template <class C>
NASCENT_D C wrap_add(C x, C y) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) + U(y)));
  } else {
    return x + y;
  }
}
template <class C>
NASCENT_D C wrap_sub(C x, C y) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return C(U(U(x) - U(y)));
  } else {
    return x - y;
  }
}
template <class C>
NASCENT_D C wrap_mul(C x, C y) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return C(U(W(U(x)) * W(U(y))));
  } else {
    return x * y;
  }
}

// --- Vectors of 16 bytes
// -------------------------------------------------------

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Whether p is aligned for 16-byte vector accesses.
inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// --- Fast division by a fixed 32-bit divisor (Granlund-Montgomery, as
// PyTorch's IntDivider) for strided index arithmetic.
struct IntDivider {
  uint32_t divisor = 1;
  uint32_t magic = 0;
  uint32_t shift = 0;

  IntDivider() = default;
  explicit IntDivider(uint32_t d) : divisor(d) {
    for (shift = 0; shift < 32; ++shift) {
      if ((uint32_t(1) << shift) >= d) break;
    }
    const uint64_t one = 1;
    magic = uint32_t(((one << 32) * ((one << shift) - d)) / d + 1);
  }
  NASCENT_HD uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = uint32_t((uint64_t(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

// --- Host-side dtype dispatch over the storage types
// ---------------------------

template <class Fn>
decltype(auto) dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
    case DType::f16:
      return fn(float16{});
    case DType::bf16:
      return fn(bfloat16{});
    case DType::i32:
      return fn(int32_t{});
    case DType::i64:
      return fn(int64_t{});
    case DType::u8:
      return fn(uint8_t{});
    case DType::boolean:
      return fn(bool{});
  }
  return fn(float{});
}

// Blocks for a grid that covers `items` with `threads` each, capped so a
// grid-stride loop takes the rest.
inline unsigned grid_for(int64_t items, int threads, int64_t cap = 1 << 20) {
  int64_t blocks = (items + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return unsigned(blocks);
}

}  // namespace nascent::cuda
