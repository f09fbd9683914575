// Element types of tensors, their sizes and the promotion rules.
//
// float16 and bfloat16 are storage types: arithmetic converts them to float.
// The conversions are plain bit manipulation so that every platform (and the
// wasm32 build) gives the same results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace nascent {

enum class DType : uint8_t { f32, f64, f16, bf16, i32, i64, u8, boolean };
inline constexpr int kNumDTypes = 8;

size_t size_of(DType dtype);
const char* name(DType dtype);
bool is_floating(DType dtype);
// Integer types, bool excluded.
bool is_integer(DType dtype);

// Result type of a binary op on two types (PyTorch's rules without the
// category-aware treatment of 0-d tensors): bool < integers < floats, and a
// mixed f16/bf16 pair goes to f32.
DType promote_types(DType a, DType b);

// The type an op that needs real numbers (exp, mean, div) computes in:
// floating types stay, everything else becomes f32.
DType to_floating(DType dtype);

struct float16 {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};

float to_float(float16 h);
float16 to_float16(float f);  // Round to nearest even, keeps NaN and inf.

inline float to_float(bfloat16 b) {
  uint32_t u = uint32_t(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bfloat16 to_bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);  // Round to nearest even.
  return {uint16_t(u >> 16)};
}

template <class T>
struct dtype_traits;
template <>
struct dtype_traits<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_traits<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_traits<float16> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_traits<bfloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_traits<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_traits<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_traits<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_traits<bool> {
  static constexpr DType value = DType::boolean;
};

template <class T>
inline constexpr DType dtype_of = dtype_traits<T>::value;

// Calls fn(T{}) with T the C++ type of dtype; the one switch over dtypes that
// kernels and tests share.
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
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

// Converts between any two element types through double (exact for every
// value the narrower types can hold, except i64 beyond 2^53).
template <class T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return double(to_float(v));
  } else {
    return double(v);
  }
}
template <class T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, float16>) {
    return to_float16(float(v));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bfloat16(float(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    // Float to integer conversion out of range is undefined in C++; saturate
    // instead, and map NaN to 0, so every backend agrees.
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

}  // namespace nascent
