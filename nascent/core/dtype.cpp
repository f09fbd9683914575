#include "nascent/core/dtype.h"

namespace nascent {

size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
    case DType::boolean:
      return 1;
  }
  return 0;
}

const char* name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 ||
         dtype == DType::bf16;
}

bool is_integer(DType dtype) {
  return dtype == DType::i32 || dtype == DType::i64 || dtype == DType::u8;
}

namespace {
// Rank inside a category; the wider type wins.
int rank(DType d) {
  switch (d) {
    case DType::boolean:
      return 0;
    case DType::u8:
      return 1;
    case DType::i32:
      return 2;
    case DType::i64:
      return 3;
    case DType::f16:
      return 4;
    case DType::bf16:
      return 4;
    case DType::f32:
      return 5;
    case DType::f64:
      return 6;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::f16 && b == DType::bf16) ||
      (a == DType::bf16 && b == DType::f16)) {
    return DType::f32;
  }
  return rank(a) >= rank(b) ? a : b;
}

DType to_floating(DType dtype) {
  return is_floating(dtype) ? dtype : DType::f32;
}

float to_float(float16 h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t mant = h.bits & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {
    // Subnormal half: normalise the mantissa.
    int shift = 0;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    mant &= 0x3ffu;
    u = sign | (uint32_t(113 - shift) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float16 to_float16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return {uint16_t(sign | 0x7e00u)};   // NaN
  if (abs >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};  // Overflow.
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: add a magic number so the FPU rounds.
    float magic;
    uint32_t m = 0x3f000000u;  // 0.5f; the half subnormal unit is 2^-24.
    std::memcpy(&magic, &m, 4);
    float a;
    std::memcpy(&a, &abs, 4);
    a += magic;
    uint32_t r;
    std::memcpy(&r, &a, 4);
    return {uint16_t(sign | uint16_t(r - m))};
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // Rebias exponent and round to even.
  return {uint16_t(sign | uint16_t(abs >> 13))};
}

}  // namespace nascent
