// i64 on WGSL, which has no 64-bit integers: each value is two u32 words
// (low, high) held as vec2<u32>, and these functions do the arithmetic the
// kernels need, wrapping as the CPU's two's complement does.
#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

const char* int64_wgsl() {
  return R"(
fn i64_of(v: i32) -> vec2<u32> {
  return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0));
}
fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn i64_neg(a: vec2<u32>) -> vec2<u32> {
  return i64_add(~a, vec2<u32>(1u, 0u));
}
fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return i64_add(a, i64_neg(b));
}
// The low 64 bits of a * b: the full product of the low words (by 16-bit
// halves) plus the cross terms' low words.
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let a0 = a.x & 0xffffu;
  let a1 = a.x >> 16u;
  let b0 = b.x & 0xffffu;
  let b1 = b.x >> 16u;
  let m0 = a0 * b0;
  let m1 = a0 * b1;
  let m2 = a1 * b0;
  let mid = (m0 >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu);
  let hi = a1 * b1 + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u);
  return vec2<u32>((m0 & 0xffffu) | (mid << 16u),
                   hi + a.x * b.y + a.y * b.x);
}
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  if (a.y != b.y) { return bitcast<i32>(a.y) < bitcast<i32>(b.y); }
  return a.x < b.x;
}
fn i64_nz(a: vec2<u32>) -> bool { return (a.x | a.y) != 0u; }
// Saturating, NaN to 0, as from_double<int64_t>. Past 2^31 a float is an
// integer, so its two words split exactly.
fn f32_to_i64(v: f32) -> vec2<u32> {
  if (is_nan(v)) { return vec2<u32>(0u, 0u); }
  if (v >= 9.223372e18) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
  if (v <= -9.223372e18) { return vec2<u32>(0u, 0x80000000u); }
  if (abs(v) < 2147483648.0) { return i64_of(i32(v)); }
  let a = abs(v);
  let hi = floor(a * 2.3283064365386963e-10);
  let m = vec2<u32>(u32(a - hi * 4294967296.0), u32(hi));
  return select(m, i64_neg(m), v < 0.0);
}
// Rounded to nearest even: the top 24 bits of the magnitude, rounded on
// the bits below them.
fn i64_to_f32(v: vec2<u32>) -> f32 {
  let lo = bitcast<i32>(v.x);
  if (v.y == select(0u, 0xffffffffu, lo < 0)) { return f32(lo); }
  let neg = (v.y & 0x80000000u) != 0u;
  let m = select(v, i64_neg(v), neg);
  var r: f32;
  if (m.y == 0u) {
    r = f32(m.x);
  } else {
    let z = countLeadingZeros(m.y);
    let top = select((m.y << z) | (m.x >> (32u - z)), m.y, z == 0u);
    let rest = m.x << z;
    var mant = top >> 8u;
    let round = top & 0xffu;
    if (round > 0x80u || (round == 0x80u && (rest != 0u ||
                                             (mant & 1u) == 1u))) {
      mant = mant + 1u;
    }
    r = f32(mant) * bitcast<f32>(u32(40 - i32(z) + 127) << 23u);
  }
  return select(r, -r, neg);
}
)";
}

}  // namespace nascent::webgpu
