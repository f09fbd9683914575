// The WGSL math library of the element-wise kernels: exp, expm1, log,
// log1p, sin, cos, tanh, sigmoid, silu, gelu, gelu_tanh, erf and pow in
// f32, within the conformance suite's bounds (the CPU backend's).
//
// WGSL's builtins are not enough: on lavapipe exp is 32 ulp off near -77,
// log loses its relative precision near 1 and sin/cos reduce with a short
// pi. Two facts of the drivers shape the code: fma() is not fused there
// (so exact products use Dekker's split, not an FMA), and the optimizer
// reassociates sums ((a + b) - a becomes b), so every compensated sum
// passes its intermediates through keep(), an OR with a parameter word
// that is 0 at run time and unknown to the compiler.
//
// Measured on lavapipe over 2M inputs each (max error, ulp): exp 0.51,
// expm1 0.82, log 0.67, log1p 0.66, sin 1.07, cos 1.09 (up to 1e38),
// tanh 1.4, sigmoid 1.4, silu 1.8, erf 1.45, pow 0.58.
#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

const char* math_wgsl() {
  return R"(
fn keep(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) | P[Z]); }
fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(0x7f800000u); }
// 2^k for k in [-126, 127].
fn p2i(k: i32) -> f32 { return bitcast<f32>(u32(k + 127) << 23u); }
// a * b = p + e exactly, by Veltkamp's split.
fn split_hi(a: f32) -> f32 {
  let c = keep(4097.0 * a);
  return keep(c - keep(c - a));
}
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = keep(a * b);
  let ah = split_hi(a);
  let al = keep(a - ah);
  let bh = split_hi(b);
  let bl = keep(b - bh);
  return vec2<f32>(p, ((keep(ah * bh - p) + ah * bl) + al * bh) + al * bl);
}
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = keep(a + b);
  let bb = keep(s - a);
  return vec2<f32>(s, (a - keep(s - bb)) + (b - bb));
}
// Needs |a| >= |b|.
fn fast_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = keep(a + b);
  return vec2<f32>(s, b - keep(s - a));
}

// --- exp, expm1 ---
// e^(h + l) for |h| <= ln(2) / 2 and tiny l: 1 + r + r^2 P(r) (Taylor to
// r^8, 2e-10), with 1 + h kept in two parts so that only the last
// addition rounds.
fn exp_reduced(h: f32, l: f32) -> f32 {
  let r = h + l;
  let q = r * r * (0.5 + r * (0.16666667 + r * (0.041666668 + r *
          (0.008333334 + r * (0.0013888889 + r * (0.00019841270 +
          r * 2.4801587e-5))))));
  let s = fast_two_sum(1.0, h);
  return s.x + ((s.y + l) + q);
}
// e^(h + l) for h in [-104, 88.8]: n = round(h / ln 2), r = h - n ln 2 in
// two steps (n times the high part is exact), 2^n as two factors so that
// subnormal results and those next to 2^128 scale right.
fn exp_hl(h: f32, l: f32) -> f32 {
  let n = round(h * 1.44269504);
  let r = keep(keep(h - n * 0.693145751953125) - n * 1.428606765330187e-6);
  let v = exp_reduced(r, l);
  let k = i32(n);
  let k1 = k / 2;
  return v * p2i(k1) * p2i(k - k1);
}
fn exp_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x > 88.72284) { return inf_f(); }
  if (x < -104.0) { return 0.0; }
  return exp_hl(x, 0.0);
}
// e^r - 1 for |r| <= ln(2) / 2.
fn expm1_reduced(r: f32) -> f32 {
  let p = 0.16666667 + r * (0.041666668 + r * (0.008333334 + r *
          (0.0013888889 + r * (0.00019841270 + r * 2.4801587e-5))));
  return r + r * r * (0.5 + r * p);
}
// Past ln(2) / 2: 2^n (e^r - 1) + (2^n - 1), where 2^n - 1 is exact.
fn expm1_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (abs(x) <= 0.34657359) { return expm1_reduced(x); }
  if (x > 40.0) { return exp_f(x); }
  if (x < -18.0) { return -1.0; }
  let n = round(x * 1.44269504);
  let r = keep(keep(x - n * 0.693145751953125) - n * 1.428606765330187e-6);
  let t = p2i(i32(n));
  return (t - 1.0) + t * expm1_reduced(r);
}

// --- log, log1p (musl's logf and log1pf) ---
// x = 2^k (1 + f) with 1 + f in [sqrt(2) / 2, sqrt(2)); subnormals scaled.
fn log_split(x: f32) -> vec2<f32> {
  var v = x;
  var k = 0;
  if (v < 1.17549435e-38) {
    v = v * 8388608.0;
    k = -23;
  }
  var ix = bitcast<u32>(v) + (0x3f800000u - 0x3f3504f3u);
  k = k + i32(ix >> 23u) - 127;
  ix = (ix & 0x007fffffu) + 0x3f3504f3u;
  return vec2<f32>(f32(k), bitcast<f32>(ix) - 1.0);
}
// log(1 + f) + k ln 2 with c the rounding error of 1 + f, relative.
fn log_finish(f: f32, k: f32, c: f32) -> f32 {
  let s = f / (2.0 + f);
  let z = s * s;
  let w = z * z;
  let r = z * (0.66666662693 + w * 0.28498786688) +
          w * (0.40000972152 + w * 0.24279078841);
  let hfsq = 0.5 * f * f;
  let t = keep(s * (hfsq + r) + keep(k * 9.0580006145e-06 + c));
  return keep(keep(t - hfsq) + f) + k * 6.9313812256e-01;
}
fn log_f(x: f32) -> f32 {
  if (is_nan(x) || x < 0.0) { return nan_f(); }
  if (x == 0.0) { return -inf_f(); }
  if (!finite(x)) { return x; }
  let kf = log_split(x);
  return log_finish(kf.y, kf.x, 0.0);
}
fn log1p_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x <= -1.0) { return select(nan_f(), -inf_f(), x == -1.0); }
  if (!finite(x) || abs(x) < 5.96046448e-08) { return x; }
  if (x >= -0.2928932 && x < 0.41421354) { return log_finish(x, 0.0, 0.0); }
  let u = keep(1.0 + x);
  let kf = log_split(u);
  // What 1 + x lost in rounding, relative to u.
  var c = 0.0;
  if (kf.x < 25.0) {
    c = select(x - keep(u - 1.0), 1.0 - keep(u - x), kf.x >= 2.0) / u;
  }
  return log_finish(kf.y, kf.x, c);
}

// --- sin, cos ---
// a * b as (low word, high word).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let m0 = a0 * b0;
  let m1 = a0 * b1;
  let m2 = a1 * b0;
  let mid = (m0 >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu);
  return vec2<u32>((m0 & 0xffffu) | (mid << 16u),
                   a1 * b1 + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u));
}
// |x| = q pi/2 + d.x + d.y with |d| <= pi/4, by Payne and Hanek: x times
// the 96 bits of 2/pi that matter, in integers, so that even 1e38 keeps
// every digit of its remainder. Returns (d.x, d.y, q mod 4).
fn reduce_pio2(ax: f32) -> vec3<f32> {
  if (ax <= 0.78539816) { return vec3<f32>(ax, 0.0, 0.0); }
  // The bits of 2/pi after the point, behind one zero word.
  var t = array<u32, 10>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
      0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u,
      0xb7246e3au);
  let bits = bitcast<u32>(ax);
  let m = (bits & 0x7fffffu) | 0x800000u;
  let e = i32(bits >> 23u) - 150;  // ax = m 2^e
  // Bits from e - 1 after the point: earlier ones add multiples of 4.
  let p0 = u32(e + 30);
  let j = p0 >> 5u;
  let sh = p0 & 31u;
  var w = array<u32, 3>(0u, 0u, 0u);
  for (var i = 0u; i < 3u; i = i + 1u) {
    let a = t[j + i];
    let b = t[j + i + 1u];
    w[i] = select((a << sh) | (b >> (32u - sh)), a, sh == 0u);
  }
  // m w / 2^94 is x 2/pi mod 4 (the words past bit 96 add multiples of 4).
  let lo = mul_wide(m, w[2]);
  let mi = mul_wide(m, w[1]);
  let hi = mul_wide(m, w[0]);
  let p1 = lo.y + mi.x;
  let p2 = mi.y + hi.x + select(0u, 1u, p1 < lo.y);
  var q = p2 >> 30u;
  // The fraction's top 64 bits; past one half, the nearer quadrant.
  var fh = (p2 << 2u) | (p1 >> 30u);
  var fl = (p1 << 2u) | (lo.x >> 30u);
  let neg = (fh & 0x80000000u) != 0u;
  if (neg) {
    q = (q + 1u) & 3u;
    fh = ~fh;
    fl = ~fl + 1u;
    if (fl == 0u) { fh = fh + 1u; }
  }
  var shift = 0u;
  if (fh == 0u) {
    fh = fl;
    fl = 0u;
    shift = 32u;
  }
  let z = countLeadingZeros(fh);
  if (z > 0u) {
    fh = (fh << z) | (fl >> (32u - z));
    fl = fl << z;
  }
  let scale = p2i(-i32(shift + z) - 32);
  let f_hi = f32(fh & 0xffffff00u) * scale;
  let f_lo = (f32(fh & 0xffu) * 4294967296.0 + f32(fl >> 8u) * 256.0) *
             scale * 2.3283064e-10;
  // (f_hi + f_lo) pi/2 in two parts.
  let ph = two_prod(f_hi, 1.5707963705062866);
  let d = fast_two_sum(ph.x, ph.y + (f_hi * -4.371139e-08 +
                                     f_lo * 1.5707964));
  let sgn = select(1.0, -1.0, neg);
  return vec3<f32>(sgn * d.x, sgn * d.y, f32(q));
}
// sin(x + dx) and cos(x + dx) for |x| <= pi/4 (Cephes' sinf and cosf).
fn sin_poly(x: f32, dx: f32) -> f32 {
  let z = x * x;
  let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) *
          z * x;
  return x + (s + dx * (1.0 - 0.5 * z));
}
fn cos_poly(x: f32, dx: f32) -> f32 {
  let z = x * x;
  let c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z +
           4.166664568298827e-2) * z * z;
  let h = 0.5 * z;
  let w = keep(1.0 - h);
  return w + ((keep(1.0 - w) - h) + (c - x * dx));
}
fn sincos_f(x: f32, want_cos: bool) -> f32 {
  if (!finite(x)) { return nan_f(); }
  let r = reduce_pio2(abs(x));
  let q = u32(r.z) + select(0u, 1u, want_cos);
  let v = select(sin_poly(r.x, r.y), cos_poly(r.x, r.y), (q & 1u) == 1u);
  var sgn = select(1.0, -1.0, (q & 2u) == 2u);
  if (!want_cos && x < 0.0) { sgn = -sgn; }
  return sgn * v;
}
fn sin_f(x: f32) -> f32 { return sincos_f(x, false); }
fn cos_f(x: f32) -> f32 { return sincos_f(x, true); }

// --- tanh, sigmoid and the activations ---
// tanh(x) = e / (e + 2) with e = expm1(2|x|) and x's sign; past 9.1 it is
// 1 in f32, below 2^-12 it is x.
fn tanh_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a < 0.00024414062) { return x; }
  if (a > 9.1) { return sign(x); }
  let e = expm1_f(2.0 * a);
  return sign(x) * (e / (e + 2.0));
}
// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below: e^-|x| never
// overflows and the tail keeps its relative precision.
fn sigmoid_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let e = exp_f(-abs(x));
  return select(1.0, e, x < 0.0) / (1.0 + e);
}
// x s for a factor s in [0, 1] that is 0 at x = -inf (-0 then, not NaN).
fn times_factor(x: f32, s: f32) -> f32 {
  return max(x, -3.40282347e38) * s;
}
fn silu_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return times_factor(x, sigmoid_f(x));
}
// 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
// the sigmoid form does not cancel for negative x.
fn gelu_tanh_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let v = (x * 1.5957691216057308) * (x * x * 0.044715 + 1.0);
  return times_factor(x, sigmoid_f(v));
}
// erfc(z) for z >= 0.75 given z^2 = hi + lo exactly: e^-z^2 P(z) / Q(z),
// the CPU backend's fit (relative error 6e-9).
fn erfc_large(z: f32, hi: f32, lo: f32) -> f32 {
  let p = (((0.0327099003 * z + 0.228806391) * z + 0.730739176) * z +
           1.23758483) * z + 1.0;
  let q = ((((0.0579760745 * z + 0.405575573) * z + 1.32375383) * z +
            2.40043521) * z + 2.36596465) * z + 1.0;
  return (p / q) * exp_hl(-hi, -lo);
}
// erf: x P(x^2) below 0.75 (relative error 1.4e-9), else 1 - erfc(|x|)
// with x's sign; past 4 it is 1 in f32.
fn erf_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a < 0.75) {
    let z = x * x;
    return x * (((((-0.000674954324 * z + 0.00511435) * z - 0.0268346276) *
                  z + 0.112833768) * z - 0.3761262) * z + 1.12837911);
  }
  if (a >= 4.0) { return sign(x); }
  let h = two_prod(a, a);
  return sign(x) * (1.0 - erfc_large(a, h.x, h.y));
}
// gelu(x) = x Phi(x); Phi(-a) = e^(-a^2 / 2) P(a) / Q(a) (the CPU
// backend's fit), so that the tail for negative x keeps its precision.
fn gelu_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = min(abs(x), 16.0);
  let h = two_prod(a, -0.5 * a);
  let p = (((0.00408873754 * a + 0.0404476374) * a + 0.182684794) * a +
           0.437552303) * a + 0.5;
  let q = ((((0.0102488184 * a + 0.101393893) * a + 0.468017668) * a +
            1.2002176) * a + 1.67298961) * a + 1.0;
  let c = (p / q) * exp_hl(h.x, h.y);
  return times_factor(x, select(1.0 - c, c, x < 0.0));
}

// --- pow ---
// log(x) for finite x > 0 as hi + lo (about 2^-40 relative):
// log(1 + f) = 2 atanh(s), s = f / (2 + f) in two parts, the series to
// s^13 (|s| <= 0.172).
fn log_hl(x: f32) -> vec2<f32> {
  let kf = log_split(x);
  let f = keep(kf.y);
  let d = fast_two_sum(2.0, f);
  let sh = keep(f / d.x);
  let pr = two_prod(sh, d.x);
  let sl = ((f - pr.x) - pr.y - sh * d.y) / d.x;
  let z = sh * sh;
  let t = sh * z * (0.6666666667 + z * (0.4 + z * (0.2857142857 + z *
          (0.2222222222 + z * (0.1818181818 + z * 0.1538461538)))));
  let a = two_sum(kf.x * 0.693145751953125, 2.0 * sh);
  let low = a.y + (2.0 * sl + (t + kf.x * 1.428606765330187e-6));
  return fast_two_sum(a.x, low);
}
// x^y = e^(y log|x|) in two-part arithmetic, so that only the last
// rounding counts, with C99's special cases (Annex F.9.4.4).
fn pow_f(x: f32, y: f32) -> f32 {
  if (y == 0.0 || x == 1.0) { return 1.0; }
  if (is_nan(x) || is_nan(y)) { return x + y; }
  let ax = abs(x);
  let y_int = round(y) == y;  // inf counts, as even.
  let odd = y_int && abs(y) < 16777216.0 && round(y * 0.5) != y * 0.5;
  if (x < 0.0 && finite(x) && finite(y) && !y_int) { return nan_f(); }
  var r: f32;
  if (ax == 1.0) {
    r = 1.0;  // (-1)^(+-inf); odd integers get the sign below.
  } else if (ax == 0.0 || !finite(ax) || !finite(y)) {
    // The sign of y log|x| says 0 or inf.
    r = select(0.0, inf_f(), (ax > 1.0) == (y > 0.0));
  } else {
    let l = log_hl(ax);
    let rough = y * l.x;
    if (rough > 89.0) {
      r = inf_f();
    } else if (rough < -105.0) {
      r = 0.0;  // Also before two_prod's split of a huge y overflows.
    } else {
      let p = two_prod(y, l.x);
      let h = fast_two_sum(p.x, p.y + y * l.y);
      r = select(exp_hl(h.x, h.y), inf_f(), h.x > 88.8);
      r = select(r, 0.0, h.x < -104.0);
    }
  }
  // A negative x (or -0) with an odd integer y keeps its sign.
  if (odd && (bitcast<u32>(x) & 0x80000000u) != 0u) { r = -r; }
  return r;
}
)";
}

}  // namespace nascent::webgpu
