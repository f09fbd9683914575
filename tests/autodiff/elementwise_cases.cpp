// Gradchecks of copy, the unary and binary element-wise ops and where.
#include "autodiff/gradcheck.h"

namespace nascent::autodiff::testing {
namespace {

using T = std::vector<Tensor>;

GRADCHECK_CASE(copy, "contiguous() of strided views, cast round trip") {
  check_layouts("contiguous", {{{3, 4}}},
                [](const T& x) { return mul(x[0].contiguous(), x[0]); });
  check("clone of a sliced view", {{{2, 5}}},
        [](const T& x) { return x[0].slice(1, 1, 5, 2).clone(); });
  // Through f32 and back: the rule casts the gradient back (f32 rounding is
  // too coarse for finite differences, so the values are checked exactly).
  Tensor x = random({4}, 7);
  set_requires_grad(x);
  Tensor r = random({4}, 8);
  std::vector<Tensor> g = grad({x.cast(DType::f32).cast(DType::f64)}, {x}, {r});
  EXPECT_EQ(g[0].dtype(), DType::f64);
  std::vector<double> got = g[0].to_vector<double>();
  std::vector<double> want = r.cast(DType::f32).to_vector<double>();
  EXPECT_EQ(got, want);
}

struct UnaryCase {
  const char* label;
  Tensor (*fn)(const Tensor&);
  double low, high, gap;
};

void check_unary(const UnaryCase& c) {
  Input in{{3, 4}, Layout::contiguous, c.low, c.high, c.gap};
  check_layouts(c.label, {in}, [&](const T& x) { return c.fn(x[0]); });
  // 0-d and a size that is not a multiple of any SIMD width.
  check(std::string(c.label) + " 0-d",
        {{{}, Layout::contiguous, c.low, c.high, c.gap}},
        [&](const T& x) { return c.fn(x[0]); });
  check(std::string(c.label) + " [17]",
        {{{17}, Layout::contiguous, c.low, c.high, c.gap}},
        [&](const T& x) { return c.fn(x[0]); });
}

GRADCHECK_CASE(neg, "layouts") {
  check_unary({"neg", neg, -2, 2, 0});
}
GRADCHECK_CASE(abs, "away from 0") {
  check_unary({"abs", abs, -2, 2, 0.1});
}
GRADCHECK_CASE(exp, "layouts") {
  check_unary({"exp", exp, -2, 2, 0});
}
GRADCHECK_CASE(log, "positive") {
  check_unary({"log", log, 0.5, 2, 0});
}
GRADCHECK_CASE(log1p, "above -1") {
  check_unary({"log1p", log1p, -0.5, 2, 0});
}
GRADCHECK_CASE(expm1, "layouts") {
  check_unary({"expm1", expm1, -2, 2, 0});
}
GRADCHECK_CASE(sqrt, "positive") {
  check_unary({"sqrt", sqrt, 0.5, 2, 0});
}
GRADCHECK_CASE(rsqrt, "positive") {
  check_unary({"rsqrt", rsqrt, 0.5, 2, 0});
}
GRADCHECK_CASE(sin, "layouts") {
  check_unary({"sin", sin, -2, 2, 0});
}
GRADCHECK_CASE(cos, "layouts") {
  check_unary({"cos", cos, -2, 2, 0});
}
GRADCHECK_CASE(tanh, "layouts") {
  check_unary({"tanh", tanh, -2, 2, 0});
}
GRADCHECK_CASE(sigmoid, "layouts") {
  check_unary({"sigmoid", sigmoid, -3, 3, 0});
}
GRADCHECK_CASE(relu, "away from 0") {
  check_unary({"relu", relu, -2, 2, 0.1});
}
GRADCHECK_CASE(gelu, "layouts") {
  check_unary({"gelu", gelu, -3, 3, 0});
}
GRADCHECK_CASE(gelu_tanh, "layouts") {
  check_unary({"gelu_tanh", gelu_tanh, -3, 3, 0});
}
GRADCHECK_CASE(silu, "layouts") {
  check_unary({"silu", silu, -3, 3, 0});
}
GRADCHECK_CASE(erf, "layouts") {
  check_unary({"erf", erf, -2, 2, 0});
}
GRADCHECK_CASE(reciprocal, "away from 0") {
  check_unary({"reciprocal", reciprocal, -2, 2, 0.5});
}
GRADCHECK_CASE(square, "layouts") {
  check_unary({"square", square, -2, 2, 0});
}

GRADCHECK_CASE(clamp, "inside and outside the bounds") {
  check_layouts("clamp", {{{4, 5}, Layout::contiguous, -2, 2}},
                [](const T& x) { return clamp(x[0], -1.0, 0.5); });
}

GRADCHECK_CASE(pow_scalar, "fractional, negative and integer exponents") {
  for (double e : {2.5, -1.5, 0.5}) {
    check_layouts("pow " + std::to_string(e),
                  {{{3, 4}, Layout::contiguous, 0.5, 2}},
                  [e](const T& x) { return pow(x[0], e); });
  }
  check_layouts("pow 3 of negatives", {{{3, 4}}},
                [](const T& x) { return pow(x[0], 3.0); });
  check("pow 0", {{{3}}}, [](const T& x) { return pow(x[0], 0.0); });
}

struct BinaryCase {
  const char* label;
  Tensor (*fn)(const Tensor&, const Tensor&);
  double low, high;  // Of the second operand.
};

void check_binary(const BinaryCase& c) {
  auto f = [&](const T& x) { return c.fn(x[0], x[1]); };
  check_layouts(c.label,
                {{{3, 4}}, {{3, 4}, Layout::contiguous, c.low, c.high}}, f);
  // Broadcasting both ways: the gradients are summed back to each shape.
  check(std::string(c.label) + " broadcast [2,1,4] and [3,1]",
        {{{2, 1, 4}}, {{3, 1}, Layout::contiguous, c.low, c.high}}, f);
  check(std::string(c.label) + " broadcast 0-d and [5]",
        {{{}}, {{5}, Layout::transposed, c.low, c.high}}, f);
}

GRADCHECK_CASE(add, "layouts, broadcast") {
  check_binary({"add", add, -2, 2});
  // The same tensor on both sides.
  check("x + x", {{{3}}}, [](const T& x) { return add(x[0], x[0]); });
}
GRADCHECK_CASE(sub, "layouts, broadcast") {
  check_binary({"sub", sub, -2, 2});
}
GRADCHECK_CASE(mul, "layouts, broadcast") {
  check_binary({"mul", mul, -2, 2});
  check("x * x", {{{3, 2}}}, [](const T& x) { return mul(x[0], x[0]); });
}
GRADCHECK_CASE(div, "layouts, broadcast") {
  check_binary({"div", div, 0.5, 2});
}
GRADCHECK_CASE(pow, "positive base, broadcast") {
  auto f = [](const T& x) { return pow(x[0], x[1]); };
  check_layouts("pow", {{{3, 4}, Layout::contiguous, 0.5, 2}, {{3, 4}}}, f);
  check("pow broadcast", {{{2, 3}, Layout::contiguous, 0.5, 2}, {{3}}}, f);
}
GRADCHECK_CASE(maximum, "layouts, broadcast") {
  check_binary({"maximum", maximum, -2, 2});
}
GRADCHECK_CASE(minimum, "layouts, broadcast") {
  check_binary({"minimum", minimum, -2, 2});
}

GRADCHECK_CASE(where, "both branches, broadcast condition") {
  Tensor cond = gt(random({3, 4}, 5), 0.0);
  check_layouts("where", {{{3, 4}}, {{3, 4}}},
                [&](const T& x) { return where(cond, x[0], x[1]); });
  Tensor row = gt(random({4}, 6), 0.0);
  check("where broadcast", {{{2, 1, 4}}, {{3, 1}}},
        [&](const T& x) { return where(row, x[0], x[1]); });
  check("masked_fill", {{{3, 4}}},
        [&](const T& x) { return masked_fill(x[0], cond, 1.5); });
}

}  // namespace
}  // namespace nascent::autodiff::testing
