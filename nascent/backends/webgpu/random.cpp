// uniform, normal and bernoulli: core's Philox-4x32-10 (random.h) in WGSL,
// one thread per element (each computes its counter block; the four lanes
// of a block are four threads). WGSL has no 64-bit integers: the counter
// and key are pairs of words and the 32x32-bit products are built from
// 16-bit halves. Element i matches the CPU's bit for bit where the CPU's
// a + (b - a) u (uniform) or a + b n (normal), computed in double and
// rounded to f32, equals f32's fused multiply-add (so for the usual ranges,
// whose products are exact); normal's log, sqrt, sin and cos are the
// adapter's, a few ulps from the CPU's.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

const char* kPhilox = R"(
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let lo = (mid << 16u) | (p00 & 0xffffu);
  let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>(hi, lo);
}
fn philox(c_lo: u32, c_hi: u32, k_lo: u32, k_hi: u32) -> vec4<u32> {
  var c0 = c_lo;
  var c1 = c_hi;
  var c2 = 0u;
  var c3 = 0u;
  var k0 = k_lo;
  var k1 = k_hi;
  for (var round = 0; round < 10; round = round + 1) {
    let p0 = mulhilo(0xD2511F53u, c0);
    let p1 = mulhilo(0xCD9E8D57u, c2);
    c0 = p1.x ^ c1 ^ k0;
    c1 = p1.y;
    c2 = p0.x ^ c3 ^ k1;
    c3 = p0.y;
    k0 = k0 + 0x9E3779B9u;
    k1 = k1 + 0xBB67AE85u;
  }
  return vec4<u32>(c0, c1, c2, c3);
}
fn unit(x: u32) -> f32 { return f32(x >> 8u) * (1.0 / 16777216.0); }
// The value of linear element i: (offset + i) as 64 bits, its block and lane.
fn draw(i: u32) -> f32 {
  let lo = XU(0u) + i;
  let hi = XU(1u) + select(0u, 1u, lo < i);
  let blo = (lo >> 2u) | (hi << 30u);
  let bhi = hi >> 2u;
  let lane = lo & 3u;
  let r = philox(blo, bhi, XU(2u), XU(3u));
  let u = vec4<f32>(unit(r.x), unit(r.y), unit(r.z), unit(r.w));
  if (NORMAL) {
    let two_pi = 6.2831853071795864;
    let pair = lane >> 1u;
    let ua = select(u.x, u.z, pair == 1u);
    let ub = select(u.y, u.w, pair == 1u);
    let rad = sqrt(-2.0 * log(1.0 - ua));
    let n = select(rad * cos(two_pi * ub), rad * sin(two_pi * ub),
                   (lane & 1u) == 1u);
    return fma(X(5u), n, X(4u));
  }
  let v = select(select(select(u.x, u.y, lane == 1u), u.z, lane == 2u), u.w,
                 lane == 3u);
  return v;
}
)";

}  // namespace

void Backend::random(RandomOp op, const RandomParams& p, Tensor& out) {
  const char* op_name = nascent::name(op);
  check_dtype(*ctx_, op_name, out);
  if (op != RandomOp::bernoulli && out.dtype() != DType::f32) {
    throw DTypeError(
        fmt::format("webgpu backend: {} into {} is not done yet (f32 only)",
                    op_name, out.to_string()));
  }
  const double threshold =
      std::clamp(std::ceil(p.a * 16777216.0), 0.0, 16777216.0);
  const uint32_t words[6] = {
      uint32_t(p.offset),
      uint32_t(p.offset >> 32),
      uint32_t(p.seed),
      uint32_t(p.seed >> 32),
      op == RandomOp::bernoulli ? uint32_t(threshold) : f32_word(p.a),
      f32_word(op == RandomOp::uniform ? p.b - p.a : p.b)};
  std::string helpers = kPhilox;
  helpers.replace(helpers.find("NORMAL"), 6,
                  op == RandomOp::normal ? "true" : "false");
  std::string body;
  switch (op) {
    case RandomOp::uniform:
      body = "fma(X(5u), draw(i), X(4u))";
      break;
    case RandomOp::normal:
      body = "draw(i)";
      break;
    case RandomOp::bernoulli:
      // 1 where u < p, as the CPU compares in double: u is k / 2^24, so
      // u < p exactly when k < ceil(p 2^24), an integer test.
      body = convert_expression(
          "select(0.0, 1.0, u32(draw(i) * 16777216.0) < XU(4u))", DType::f32,
          out.dtype());
      break;
  }
  elementwise(*ctx_, op_name, std::string("random_") + op_name, helpers, body,
              {}, out, words);
}

}  // namespace nascent::webgpu
