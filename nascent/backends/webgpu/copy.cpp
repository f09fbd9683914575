// copy: strided source to strided destination, converting the dtype with
// the rules of from_double() (floats saturate into integers, NaN gives 0;
// integers wrap into narrower integers, as the CPU's casts). i64 is two
// words (int64.cpp).
#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

const char* kConvertHelpers = R"(
fn f32_to_i32(v: f32) -> i32 {
  if (is_nan(v)) { return 0; }
  if (v >= 2147483647.0) { return 2147483647; }
  if (v <= -2147483648.0) { return -2147483647 - 1; }
  return i32(v);
}
// Exact widenings into f64's two words (low, high).
fn f32_to_f64(v: f32) -> vec2<u32> {
  let u = bitcast<u32>(v);
  let s = u & 0x80000000u;
  let e = (u >> 23u) & 0xffu;
  var m = u & 0x7fffffu;
  if (e == 0xffu) { return vec2<u32>(m << 29u, s | 0x7ff00000u | (m >> 3u)); }
  if (e == 0u && m == 0u) { return vec2<u32>(0u, s); }
  var b = e + 896u;  // 1023 - 127
  if (e == 0u) {
    // Subnormal: normalize, the leading bit at position p.
    let p = 31u - countLeadingZeros(m);
    m = (m << (23u - p)) & 0x7fffffu;
    b = p + 874u;  // 1023 - 149
  }
  return vec2<u32>(m << 29u, s | (b << 20u) | (m >> 3u));
}
fn i32_to_f64(v: i32) -> vec2<u32> {
  if (v == 0) { return vec2<u32>(0u, 0u); }
  let s = select(0u, 0x80000000u, v < 0);
  let a = select(bitcast<u32>(v), 0u - bitcast<u32>(v), v < 0);
  let p = 31u - countLeadingZeros(a);
  // The 52 bits of fraction below the leading one: a's p bits, left-aligned.
  let f = select(a << (32u - p), 0u, p == 0u);
  return vec2<u32>(f << 20u, s | ((1023u + p) << 20u) | (f >> 12u));
}
fn f32_to_u8(v: f32) -> u32 {
  if (is_nan(v) || v <= 0.0) { return 0u; }
  if (v >= 255.0) { return 255u; }
  return u32(v);
}
)";

// The WGSL expression that converts `v` of dtype `from` to `to`.
std::string convert(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  const bool small_from = from == DType::u8 || from == DType::boolean;
  if (to == DType::f64) {
    if (from == DType::f64) return v;
    if (from == DType::f32) return "f32_to_f64(" + v + ")";
    if (from == DType::i32) return "i32_to_f64(" + v + ")";
    return "i32_to_f64(i32(" + v + "))";
  }
  if (from == DType::i64) {
    switch (to) {
      case DType::f32:
        return "i64_to_f32(" + v + ")";
      case DType::i32:
        return "bitcast<i32>(" + v + ".x)";
      case DType::u8:
        return "(" + v + ".x & 0xffu)";
      default:
        return "select(0u, 1u, i64_nz(" + v + "))";
    }
  }
  if (to == DType::i64) {
    if (from == DType::f32) return "f32_to_i64(" + v + ")";
    if (from == DType::i32) return "i64_of(" + v + ")";
    return "vec2<u32>(" + v + ", 0u)";
  }
  switch (to) {
    case DType::f32:
      return "f32(" + v + ")";
    case DType::i32:
      return from == DType::f32 ? "f32_to_i32(" + v + ")" : "i32(" + v + ")";
    case DType::u8:
      if (from == DType::f32) return "f32_to_u8(" + v + ")";
      return small_from ? v : "bitcast<u32>(" + v + ")";
    default:
      if (from == DType::f32) return "select(0u, 1u, nz_f(" + v + "))";
      return fmt::format("select(0u, 1u, {} != {})", v,
                         from == DType::i32 ? "0" : "0u");
  }
}

}  // namespace

std::string convert_expression(const std::string& v, DType from, DType to) {
  return convert(v, from, to);
}
const char* convert_helpers() {
  return kConvertHelpers;
}

void Backend::copy(const Tensor& src, Tensor& dst) {
  // f64 only as a copy's result from a 32-bit type, or of itself: that is
  // what reading a tensor as doubles needs (Tensor::to_vector<double>).
  const bool to_f64 = dst.dtype() == DType::f64;
  check_dtype(*ctx_, "copy", src, true, to_f64 && src.dtype() == DType::f64);
  check_dtype(*ctx_, "copy", dst, true, src.dtype() != DType::i64);
  const Tensor* in[] = {&src};
  const bool i64 = src.dtype() == DType::i64 || dst.dtype() == DType::i64;
  elementwise(*ctx_, "copy", "copy",
              std::string(kConvertHelpers) + (i64 ? int64_wgsl() : ""),
              convert("a", src.dtype(), dst.dtype()), in, dst);
}

}  // namespace nascent::webgpu
