// Conformance cases for the element-wise unary ops: long double references
// on every dtype an op accepts, every layout, edge and threaded shapes, and
// special values (NaN, inf, -0, domain edges, arguments past the range of
// the vectorised approximations).
#include <cmath>
#include <limits>

#include "conformance/elementwise.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

using Real = long double;
constexpr Real kInf = std::numeric_limits<Real>::infinity();

enum class Domain { real, numeric, rounding, logical };

struct UnarySpec {
  UnaryOp op;
  Domain domain;
  Real (*ref)(Real x, const UnaryParams& p);
  double lo, hi;  // In-range inputs.
  // Error bound in ulps of the compute type; cond(x) scales it where the
  // function amplifies the rounding of an intermediate.
  double ulps = 0.5;
  double (*cond)(Real x) = nullptr;
  bool zero_sign = false;
  std::vector<double> specials = {};
  UnaryParams params = {};
  bool large = true;  // Also run the threaded and large shapes.
};

// Values every float case sees, then each op adds its own domain edges.
const std::vector<double> kSpecials = {
    NAN,    INFINITY, -INFINITY, 0.0, -0.0, 1.0,   -1.0,  0.5,    -0.5,
    1.5,    -2.5,     2.5,       3.5, 1e-3, -1e-3, 1e-30, -1e-30, 1e-40,
    -1e-40, 100.0,    -100.0,    1e4, -1e4, 1e30,  -1e30, 3e38,   -3e38};

Real round_half_even(Real x) {
  if (!std::isfinite(x)) return x;
  Real f = std::floor(x), d = x - f;
  Real r = d > 0.5L                  ? f + 1
           : d < 0.5L                ? f
           : std::fmod(f, 2.0L) == 0 ? f
                                     : f + 1;
  return r == 0 ? std::copysign(0.0L, x) : r;
}

Real sign_ref(Real x, const UnaryParams&) {
  if (std::isnan(x)) return x;
  return x > 0 ? 1 : x < 0 ? -1 : 0;
}
Real gelu_ref(Real x, const UnaryParams&) {
  if (x == -kInf) return 0;  // The limit; x * Phi(x) would be -inf * 0.
  return x * 0.5L * std::erfc(-x / std::sqrt(2.0L));
}
// 0.5 x (1 + tanh(u)) = x * sigmoid(2u), which keeps its precision for
// negative x where 1 + tanh(u) cancels.
Real gelu_tanh_v(Real x) {
  return 2 * 0.79788456080286535588L * (x + 0.044715L * x * x * x);
}
Real gelu_tanh_ref(Real x, const UnaryParams&) {
  if (x == -kInf) return 0;
  return x / (1 + std::exp(-gelu_tanh_v(x)));
}
Real silu_ref(Real x, const UnaryParams&) {
  if (x == -kInf) return 0;
  return x / (1 + std::exp(-x));
}
Real clamp_ref(Real x, const UnaryParams& p) {
  if (std::isnan(x)) return x;
  return x < p.a ? Real(p.a) : x > p.b ? Real(p.b) : x;
}

// silu, gelu and gelu_tanh are x times a factor that is subnormal far below
// zero, so that factor's rounding (a subnormal unit) is multiplied by |x|.
double times_factor_tiny_scale(Real x) {
  return std::isfinite(x) ? double(std::max(Real(1), std::fabs(x))) : 1.0;
}

// Rounding of x^2 / 2 inside e^(-x^2/2) grows the error as x^2.
double gelu_cond(Real x) {
  return std::isfinite(x) ? double(1 + x * x / 4) : 1.0;
}
// sigmoid(v) with v computed in the compute type: error grows as |v|.
double gelu_tanh_cond(Real x) {
  return std::isfinite(x) ? double(1 + std::fabs(gelu_tanh_v(x))) : 1.0;
}

#define REF(expr)                            \
  [](Real x, const UnaryParams& p) -> Real { \
    (void)p;                                 \
    return expr;                             \
  }

// One row per op: op, domain, reference, input range, bound in ulps,
// bound growth, compare the sign of zero, extra special values, params.
// clang-format off
const std::vector<UnarySpec>& specs() {
  using D = Domain;
  using U = UnaryOp;
  static const std::vector<UnarySpec> all = {
    {U::neg, D::numeric, REF(-x), -10, 10, 0.5, nullptr, true},
    {U::abs, D::numeric, REF(std::fabs(x)), -10, 10, 0.5, nullptr, true},
    {U::sign, D::numeric, sign_ref, -3, 3, 0.5, nullptr, true},
    {U::exp, D::real, REF(std::exp(x)), -80, 80, 1, nullptr, false,
     {88.72, 88.73, 89.0, -87.3, -87.4, -103.9, -104.1, -200, 200, 709.7,
      709.8, -745.2}},
    {U::log, D::real, REF(std::log(x)), 1e-3, 100, 4, nullptr, false,
     {1 + 0x1p-23, 1 - 0x1p-24, 1e-45, 1e-38, 2.0, 0x1p-1074}},
    {U::log1p, D::real, REF(std::log1p(x)), -0.99, 10, 2, nullptr, false,
     {-1.0, -1 + 0x1p-24, -2.0, 0x1p-30, -0x1p-30, 1e-20}},
    {U::expm1, D::real, REF(std::expm1(x)), -10, 10, 4, nullptr, false,
     {0x1p-30, -0x1p-30, 0.34, 0.35, 88.7, 89.0, -104.1, -200}},
    {U::sqrt, D::real, REF(std::sqrt(x)), 0, 100, 0.5, nullptr, true,
     {2.0, 0x1p-149}},
    {U::rsqrt, D::real, REF(1 / std::sqrt(x)), 1e-3, 100, 1, nullptr, false,
     {2.0, 0x1p-149}},
    {U::sin, D::real, REF(std::sin(x)), -20, 20, 3, nullptr, false,
     {3.14159265358979, 6.28318530717959, 38999.0, 39001.0, -50000.0, 1e6,
      1e20, -1e20}},
    {U::cos, D::real, REF(std::cos(x)), -20, 20, 3, nullptr, false,
     {1.5707963267949, 4.71238898038469, 38999.0, 39001.0, -50000.0, 1e6,
      1e20, -1e20}},
    {U::tanh, D::real, REF(std::tanh(x)), -10, 10, 4, nullptr, false,
     {0x1p-30, 18.0, 19.0, -19.0, 9.0, -0.3, 1e-40, -1e-40, 8.0, -8.99, 9.01,
      3.18826}},
    {U::sigmoid, D::real, REF(1 / (1 + std::exp(-x))), -30, 30, 2, nullptr,
     false, {-88.0, -89.0, -104.5, -750.0, 89.0, 750.0}},
    // relu(-0) may be either zero: PyTorch gives +0, the scalar path -0,
    // and clang's WASM SIMD code +0 on strided bf16 runs.
    {U::relu, D::numeric, REF(x < 0 ? 0 : x), -5, 5, 0.5, nullptr, false},
    {U::gelu, D::real, gelu_ref, -10, 10, 4, gelu_cond, false,
     {-5.0, -8.0, -12.0, -13.5, -14.0, -20.0, 0x1p-30, -0x1p-30, 5.0, 6.0}},
    {U::gelu_tanh, D::real, gelu_tanh_ref, -8, 8, 3, gelu_tanh_cond, false,
     {-9.0, -10.0, -11.0, 0x1p-30, 9.0, 12.0}},
    {U::silu, D::real, silu_ref, -30, 30, 2.5, nullptr, false,
     {-88.0, -89.0, -104.5, -750.0, 89.0, 750.0}},
    {U::erf, D::real, REF(std::erf(x)), -5, 5, 4, nullptr, false,
     {0x1p-30, -0x1p-30, 0.74, 0.75, 0.76, -0.75, 3.9, 4.0, 6.0, 10.0, -10.0,
      27.0}},
    {U::floor, D::rounding, REF(std::floor(x)), -10, 10, 0.5, nullptr, true,
     {-0.2, 0x1p23 + 1, -0x1p23 - 1, 0x1p52 + 1}},
    {U::ceil, D::rounding, REF(std::ceil(x)), -10, 10, 0.5, nullptr, true,
     {-0.2, 0x1p23 + 1, -0x1p23 - 1, 0x1p52 + 1}},
    {U::round, D::rounding, REF(round_half_even(x)), -10, 10, 0.5, nullptr,
     true, {-0.2, -0.5, 4.5, -4.5, 5.5, 0.49999997, 0x1p23 - 0.5, 0x1p23 + 1,
            0x1p52 + 1, 0x1p52 - 0.5}},
    {U::reciprocal, D::real, REF(1 / x), -5, 5, 0.5, nullptr, false,
     {3.0, 1e38, -1e38, 0x1p-149}},
    {U::square, D::numeric, REF(x * x), -10, 10, 0.5, nullptr, true,
     {1e19, 1e20, 3e-23}},
    {U::clamp, D::numeric, clamp_ref, -3, 3, 0.5, nullptr, true,
     {-1.0, 1.5, 1.4999999, -1.0000001}, {-1.0, 1.5}},
    {U::clamp, D::numeric, clamp_ref, -5, 5, 0.5, nullptr, true,
     {-2.0, 2.0}, {-2.0, 3.0}},
    {U::logical_not, D::logical, REF(x == 0 ? 1 : 0), -2, 2},
  };
  return all;
}
// clang-format on

// pow(x, e) with the exponents that have fast paths, and a general one.
std::vector<UnarySpec> pow_specs() {
  std::vector<UnarySpec> out;
  for (double e : {2.5, 2.0, 3.0, 0.5, -1.0, -0.5, -2.0, 0.0, 1.0, -1.5}) {
    UnarySpec s{UnaryOp::pow_scalar,
                Domain::real,
                REF(std::pow(x, Real(p.a))),
                e == std::floor(e) ? -5.0 : 0.0,
                5,
                2,
                nullptr,
                false,
                {-2.0, -3.0, 0.25, 1e-20, 1e20, 1e-40, -1e-40},
                {e, 0.0},
                // Long runs for one short-form and one general exponent.
                e == 2.0 || e == 2.5};
    out.push_back(s);
  }
  return out;
}

#undef REF

bool accepts(const UnarySpec& s, DType dt) {
  return dt != DType::boolean ||
         (s.domain != Domain::numeric && s.domain != Domain::rounding);
}

bool integral(double v) {
  return v == std::floor(v);
}

// The dtype of the result, from the rules in ops.h.
DType out_dtype(const UnarySpec& s, DType dt) {
  switch (s.domain) {
    case Domain::real:
      return is_floating(dt) ? dt : DType::f32;
    case Domain::logical:
      return DType::boolean;
    case Domain::rounding:
      return dt;
    case Domain::numeric:
      // A fractional clamp bound takes an integer tensor to f32.
      if (s.op == UnaryOp::clamp && !is_floating(dt) &&
          !(integral(s.params.a) && integral(s.params.b))) {
        return DType::f32;
      }
      return dt;
  }
  return dt;
}

Tensor call(const UnarySpec& s, const Tensor& x) {
  switch (s.op) {
    case UnaryOp::neg:
      return neg(x);
    case UnaryOp::abs:
      return abs(x);
    case UnaryOp::sign:
      return sign(x);
    case UnaryOp::exp:
      return exp(x);
    case UnaryOp::log:
      return log(x);
    case UnaryOp::log1p:
      return log1p(x);
    case UnaryOp::expm1:
      return expm1(x);
    case UnaryOp::sqrt:
      return sqrt(x);
    case UnaryOp::rsqrt:
      return rsqrt(x);
    case UnaryOp::sin:
      return sin(x);
    case UnaryOp::cos:
      return cos(x);
    case UnaryOp::tanh:
      return tanh(x);
    case UnaryOp::sigmoid:
      return sigmoid(x);
    case UnaryOp::relu:
      return relu(x);
    case UnaryOp::gelu:
      return gelu(x);
    case UnaryOp::gelu_tanh:
      return gelu_tanh(x);
    case UnaryOp::silu:
      return silu(x);
    case UnaryOp::erf:
      return erf(x);
    case UnaryOp::floor:
      return floor(x);
    case UnaryOp::ceil:
      return ceil(x);
    case UnaryOp::round:
      return round(x);
    case UnaryOp::reciprocal:
      return reciprocal(x);
    case UnaryOp::square:
      return square(x);
    case UnaryOp::clamp:
      return clamp(x, s.params.a, s.params.b);
    case UnaryOp::pow_scalar:
      return pow(x, s.params.a);
    case UnaryOp::logical_not:
      return logical_not(x);
  }
  return Tensor();
}

void check(const UnarySpec& s, const Tensor& x, const std::string& label) {
  const DType out = out_dtype(s, x.dtype());
  Tensor y = call(s, x);
  ASSERT_EQ(y.dtype(), out) << label;
  ASSERT_EQ(y.shape(), x.shape()) << label;
  // The reference sees the values the kernel sees: integer inputs of real
  // ops are f32 first.
  std::vector<long double> in =
      values(s.domain == Domain::real ? x.cast(out) : x);
  std::vector<long double> want(in.size());
  Bound bound{s.ulps, {}, {}, s.zero_sign};
  for (size_t i = 0; i < in.size(); ++i) {
    want[i] = s.ref(in[i], s.params);
    if (s.cond != nullptr) bound.cond.push_back(s.cond(in[i]));
    if (s.op == UnaryOp::silu || s.op == UnaryOp::gelu ||
        s.op == UnaryOp::gelu_tanh) {
      bound.tiny_scale.push_back(times_factor_tiny_scale(in[i]));
    }
  }
  expect_values(y, want, bound, label,
                [&](size_t i) { return fmt::format("x = {}", double(in[i])); });
}

std::string describe(const UnarySpec& s) {
  if (s.op == UnaryOp::clamp || s.op == UnaryOp::pow_scalar) {
    return fmt::format("{}({}, {})", name(s.op), s.params.a, s.params.b);
  }
  return name(s.op);
}

void run(Backend& backend, const UnarySpec& s) {
  uint64_t seed = 1;
  for (DType dt : kAllDTypes) {
    if (!accepts(s, dt)) continue;
    std::vector<Shape> shapes = small_shapes();
    if (threaded_dtype(dt) && s.large) {
      shapes.push_back(kThreadedShape);
    }
    for (Layout layout : kLayouts) {
      for (const Shape& shape : shapes) {
        Tensor x =
            random_tensor(shape, dt, backend, seed++, layout, s.lo, s.hi);
        check(s, x,
              fmt::format("{} {}{} {}", describe(s), name(dt), to_string(shape),
                          name(layout)));
      }
    }
  }
  // Long enough for every thread to run SIMD bodies and tails.
  for (DType dt : {DType::f32, DType::bf16}) {
    if (!coverage().large_shapes || !s.large) break;
    check(s,
          random_tensor({kLargeSize}, dt, backend, seed++, Layout::contiguous,
                        s.lo, s.hi),
          fmt::format("{} {} large", describe(s), name(dt)));
  }
  // Special values, contiguous (SIMD bodies and tails) and strided.
  std::vector<double> sv = kSpecials;
  sv.insert(sv.end(), s.specials.begin(), s.specials.end());
  for (DType dt : kFloatDTypes) {
    if (!accepts(s, dt)) continue;
    // Three copies, so values land in SIMD bodies as well as tails.
    std::vector<double> v;
    for (int r = 0; r < 3; ++r) v.insert(v.end(), sv.begin(), sv.end());
    Tensor x = from_vector(v, backend).cast(dt);
    check(s, x, fmt::format("{} {} specials", describe(s), name(dt)));
    std::vector<double> wide;
    for (double e : v) wide.insert(wide.end(), {e, 7.0});
    Tensor strided = from_vector(wide, backend)
                         .cast(dt)
                         .slice(0, 0, int64_t(wide.size()), 2);
    check(s, strided,
          fmt::format("{} {} specials strided", describe(s), name(dt)));
  }
}

void run_op(Backend& backend, UnaryOp op) {
  int count = 0;
  for (const UnarySpec& s : specs()) {
    if (s.op == op) run(backend, s), ++count;
  }
  for (const UnarySpec& s : pow_specs()) {
    if (s.op == op) run(backend, s), ++count;
  }
  EXPECT_GT(count, 0) << "no spec for " << name(op);
}

// Wrapping integer arithmetic at the edges of each integer type, computed
// here with explicit unsigned arithmetic.
template <class T>
void check_int_edges(Backend& backend, UnaryOp op) {
  using U = std::make_unsigned_t<T>;
  std::vector<T> v = {std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::max(),
                      T(0),
                      T(1),
                      T(-1),
                      T(7)};
  for (int r = 0; r < 3; ++r) v.insert(v.end(), v.begin(), v.begin() + 6);
  Tensor x = from_vector(v, backend);
  Tensor y = op == UnaryOp::neg   ? neg(x)
             : op == UnaryOp::abs ? abs(x)
                                  : square(x);
  std::vector<T> got = y.to_vector<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    U u = U(v[i]);
    U want = op == UnaryOp::neg   ? U(U(0) - u)
             : op == UnaryOp::abs ? (v[i] < 0 ? U(U(0) - u) : u)
                                  : U(u * u);
    EXPECT_EQ(got[i], T(want))
        << name(op) << " " << name(dtype_of<T>) << " of " << int64_t(v[i]);
  }
}

void int_edges(Backend& backend, UnaryOp op) {
  check_int_edges<int32_t>(backend, op);
  check_int_edges<int64_t>(backend, op);
  check_int_edges<uint8_t>(backend, op);
}

#define UNARY_CASE(op_name)                                                  \
  CONFORMANCE_CASE(op_name, "all dtypes, layouts, shapes, special values") { \
    run_op(backend, UnaryOp::op_name);                                       \
  }

UNARY_CASE(neg)
UNARY_CASE(abs)
UNARY_CASE(sign)
UNARY_CASE(exp)
UNARY_CASE(log)
UNARY_CASE(log1p)
UNARY_CASE(expm1)
UNARY_CASE(sqrt)
UNARY_CASE(rsqrt)
UNARY_CASE(sin)
UNARY_CASE(cos)
UNARY_CASE(tanh)
UNARY_CASE(sigmoid)
UNARY_CASE(relu)
UNARY_CASE(gelu)
UNARY_CASE(gelu_tanh)
UNARY_CASE(silu)
UNARY_CASE(erf)
UNARY_CASE(floor)
UNARY_CASE(ceil)
UNARY_CASE(round)
UNARY_CASE(reciprocal)
UNARY_CASE(square)
UNARY_CASE(clamp)
UNARY_CASE(pow_scalar)
UNARY_CASE(logical_not)

#undef UNARY_CASE

CONFORMANCE_CASE(neg, "integers wrap at the type's edges") {
  int_edges(backend, UnaryOp::neg);
}
CONFORMANCE_CASE(abs, "integers wrap at the type's edges") {
  int_edges(backend, UnaryOp::abs);
}
CONFORMANCE_CASE(square, "integers wrap at the type's edges") {
  int_edges(backend, UnaryOp::square);
}

CONFORMANCE_CASE(clamp, "integer tensor with fractional bounds is f32") {
  Tensor x = from_vector(std::vector<int32_t>{-3, 0, 1, 2, 5}, backend);
  Tensor y = clamp(x, -0.5, 1.5);
  ASSERT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(),
            (std::vector<float>{-0.5f, 0.0f, 1.0f, 1.5f, 1.5f}));
  // Integral bounds keep the dtype; bounds past the type's range are fine.
  Tensor u = from_vector(std::vector<uint8_t>{0, 9, 200}, backend);
  Tensor c = clamp(u, -5, 300);
  ASSERT_EQ(c.dtype(), DType::u8);
  EXPECT_EQ(c.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 9, 200}));
}

CONFORMANCE_CASE(sign, "NaN propagates") {
  Tensor x = from_vector(std::vector<float>{NAN, -0.0f, 0.0f}, backend);
  std::vector<float> y = sign(x).to_vector<float>();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
}

}  // namespace
}  // namespace nascent::conformance
