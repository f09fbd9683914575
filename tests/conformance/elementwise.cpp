#include "conformance/elementwise.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace nascent::conformance {

std::vector<Shape> small_shapes() {
  std::vector<Shape> s = {{}, {0}, {3, 0}, {0, 5}, {2, 1, 9}, {3, 5, 7}};
  for (int64_t n = 1; n <= 17; ++n) s.push_back({n});
  s.push_back({4, 17});
  return s;
}

long double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return std::ldexp(1.0L, -24);
    case DType::f64:
      return std::ldexp(1.0L, -53);
    case DType::f16:
      return std::ldexp(1.0L, -11);
    case DType::bf16:
      return std::ldexp(1.0L, -8);
    default:
      return 0.0L;
  }
}

namespace {

// Smallest positive subnormal.
long double tiny(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return std::ldexp(1.0L, -149);
    case DType::f64:
      return std::ldexp(1.0L, -1074);
    case DType::f16:
      return std::ldexp(1.0L, -24);
    case DType::bf16:
      return std::ldexp(1.0L, -133);
    default:
      return 0.0L;
  }
}

// Halfway between the largest finite value and the next power of two:
// values at or beyond it round to inf.
long double overflow_threshold(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return std::ldexp(2.0L - std::ldexp(1.0L, -24), 127);
    case DType::f64:
      return std::ldexp(2.0L - std::ldexp(1.0L, -53), 1023);
    case DType::f16:
      return std::ldexp(2.0L - std::ldexp(1.0L, -11), 15);
    case DType::bf16:
      return std::ldexp(2.0L - std::ldexp(1.0L, -8), 127);
    default:
      return 0.0L;
  }
}

long double wrap(long double v, int bits, bool is_signed) {
  // v is an integer; reduce modulo 2^bits into the type's range.
  long double m = std::ldexp(1.0L, bits);
  long double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (is_signed && r >= m / 2) r -= m;
  return r;
}

}  // namespace

std::vector<long double> values(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  return std::vector<long double>(v.begin(), v.end());
}

long double representable(DType dtype, long double v) {
  switch (dtype) {
    case DType::i32:
      return wrap(v, 32, true);
    case DType::i64:
      return wrap(v, 64, true);
    case DType::u8:
      return wrap(v, 8, false);
    case DType::boolean:
      return v != 0 ? 1 : 0;
    default:
      break;
  }
  if (std::isnan(v)) return v;
  if (std::fabs(v) >= overflow_threshold(dtype)) {
    return std::copysign(INFINITY, v);
  }
  return v;
}

void expect_values(const Tensor& got, const std::vector<long double>& want,
                   const Bound& bound, const std::string& label,
                   const std::function<std::string(size_t)>& context) {
  ASSERT_EQ(size_t(got.numel()), want.size()) << label;
  const DType out = got.dtype();
  const bool narrow = out == DType::f16 || out == DType::bf16;
  const DType compute = narrow ? DType::f32 : out;
  const long double u_compute = unit_roundoff(compute);
  const long double u_final = narrow ? unit_roundoff(out) : 0.0L;
  const long double atol = (1 + bound.ulps) * tiny(out) +
                           (narrow ? bound.ulps * tiny(compute) : 0.0L);
  std::vector<long double> g = values(got);
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    long double w = representable(out, want[i]);
    long double a = g[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(a);
    } else if (std::isinf(w)) {
      ok = a == w;
    } else if (!is_floating(out)) {
      ok = a == w;
    } else {
      double cond = bound.cond.empty() ? 1.0 : bound.cond[i];
      long double rel = 2 * bound.ulps * cond * u_compute + u_final;
      double scale = bound.tiny_scale.empty() ? 1.0 : bound.tiny_scale[i];
      ok = std::fabs(a - w) <= rel * std::fabs(w) + scale * atol;
      if (ok && bound.zero_sign && w == 0) {
        ok = std::signbit(a) == std::signbit(w);
      }
    }
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << fmt::format(
          "{}: element {}{} is {}, expected {} ({}, bound {} ulp)", label, i,
          context ? " (" + context(i) + ")" : std::string(), double(a),
          double(w), got.to_string(), bound.ulps);
    }
  }
  if (failures > 5) {
    ADD_FAILURE() << label << ": " << failures << " of " << g.size()
                  << " elements differ";
  }
}

}  // namespace nascent::conformance
