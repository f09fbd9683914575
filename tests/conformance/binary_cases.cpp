// Conformance cases for the element-wise binary ops and where: long double
// references on every dtype, pairs of layouts, broadcasting (scalar, row,
// column, both sides, 0-d), scalar operands, edge and threaded shapes, and
// every pair of special values.
#include <cmath>
#include <limits>

#include "conformance/elementwise.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

using Real = long double;

enum class Kind { arithmetic, real, comparison, logical };

struct BinarySpec {
  BinaryOp op;
  Kind kind;
  Real (*ref)(Real a, Real b);
  double lo, hi;  // In-range inputs for both operands.
  double ulps = 0.5;
};

Real max_ref(Real a, Real b) {
  return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b;
}
Real min_ref(Real a, Real b) {
  return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b;
}

#define REF(expr) [](Real a, Real b) -> Real { return expr; }

const std::vector<BinarySpec>& specs() {
  static const std::vector<BinarySpec> all = {
      {BinaryOp::add, Kind::arithmetic, REF(a + b), -10, 10},
      {BinaryOp::sub, Kind::arithmetic, REF(a - b), -10, 10},
      {BinaryOp::mul, Kind::arithmetic, REF(a * b), -10, 10},
      {BinaryOp::div, Kind::real, REF(a / b), -10, 10},
      // glibc's pow is within 1 ulp.
      {BinaryOp::pow, Kind::real, REF(std::pow(a, b)), 0.1, 4, 1},
      {BinaryOp::maximum, Kind::arithmetic, max_ref, -3, 3},
      {BinaryOp::minimum, Kind::arithmetic, min_ref, -3, 3},
      {BinaryOp::eq, Kind::comparison, REF(a == b), -2, 2},
      {BinaryOp::ne, Kind::comparison, REF(a != b), -2, 2},
      {BinaryOp::lt, Kind::comparison, REF(a < b), -2, 2},
      {BinaryOp::le, Kind::comparison, REF(a <= b), -2, 2},
      {BinaryOp::gt, Kind::comparison, REF(a > b), -2, 2},
      {BinaryOp::ge, Kind::comparison, REF(a >= b), -2, 2},
      {BinaryOp::logical_and, Kind::logical, REF(a != 0 && b != 0), -2, 2},
      {BinaryOp::logical_or, Kind::logical, REF(a != 0 || b != 0), -2, 2},
      {BinaryOp::logical_xor, Kind::logical, REF((a != 0) != (b != 0)), -2, 2},
  };
  return all;
}

#undef REF

const BinarySpec& spec(BinaryOp op) {
  for (const BinarySpec& s : specs()) {
    if (s.op == op) return s;
  }
  throw std::logic_error("no spec");
}

// The dtype the op computes in, from the rules in ops.h.
DType compute_dtype(const BinarySpec& s, DType a, DType b) {
  DType common = promote_types(a, b);
  switch (s.kind) {
    case Kind::logical:
      return DType::boolean;
    case Kind::real:
      return to_floating(common);
    default:
      return common;
  }
}
DType result_dtype(const BinarySpec& s, DType compute) {
  return s.kind == Kind::comparison || s.kind == Kind::logical ? DType::boolean
                                                               : compute;
}
bool accepts(const BinarySpec& s, DType a, DType b) {
  return s.kind != Kind::arithmetic || promote_types(a, b) != DType::boolean;
}

// Checks op(a, b) (already computed as `y`) against the reference on the
// operands as the kernel sees them: cast to the compute dtype, broadcast.
void check_result(const BinarySpec& s, const Tensor& a, const Tensor& b,
                  const Tensor& y, const std::string& label) {
  DType compute = compute_dtype(s, a.dtype(), b.dtype());
  ASSERT_EQ(y.dtype(), result_dtype(s, compute)) << label;
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "test");
  ASSERT_EQ(y.shape(), shape) << label;
  std::vector<long double> va = values(a.cast(compute).expand(shape));
  std::vector<long double> vb = values(b.cast(compute).expand(shape));
  std::vector<long double> want(va.size());
  for (size_t i = 0; i < va.size(); ++i) want[i] = s.ref(va[i], vb[i]);
  expect_values(y, want, Bound{s.ulps, {}, {}, false}, label, [&](size_t i) {
    return fmt::format("a = {}, b = {}", double(va[i]), double(vb[i]));
  });
}

void check(const BinarySpec& s, const Tensor& a, const Tensor& b,
           const std::string& label) {
  check_result(s, a, b, binary(s.op, a, b), label);
}

using Pattern = std::pair<Shape, Shape>;

std::vector<Pattern> small_patterns() {
  std::vector<Pattern> p = {{{}, {}},
                            {{0}, {0}},
                            {{0}, {1}},
                            {{1}, {0}},
                            {{0, 3}, {3}},
                            {{2, 0}, {2, 1}},
                            {{1}, {17}},
                            {{17}, {1}},
                            {{17}, {}},
                            {{}, {17}},
                            {{4, 17}, {17}},
                            {{17}, {4, 17}},
                            {{4, 17}, {4, 1}},
                            {{4, 1}, {4, 17}},
                            {{4, 1}, {1, 17}},
                            {{4, 17}, {}},
                            {{}, {4, 17}},
                            {{2, 3, 5}, {3, 1}},
                            {{3, 1, 5}, {1, 4, 1}}};
  for (int64_t n = 1; n <= 17; ++n) p.push_back({{n}, {n}});
  return p;
}

std::vector<Pattern> threaded_patterns() {
  const Shape& t = kThreadedShape;
  return {{t, t},  {t, {t[1]}}, {t, {t[0], 1}}, {{t[0], 1}, {1, t[1]}},
          {t, {}}, {{}, t}};
}

using LayoutPair = std::pair<Layout, Layout>;
constexpr LayoutPair kSmallLayouts[] = {
    {Layout::contiguous, Layout::contiguous},
    {Layout::transposed, Layout::transposed},
    {Layout::sliced, Layout::sliced},
    {Layout::broadcast, Layout::broadcast},
    {Layout::contiguous, Layout::transposed},
    {Layout::sliced, Layout::contiguous},
    {Layout::contiguous, Layout::broadcast},
    {Layout::broadcast, Layout::sliced}};
constexpr LayoutPair kThreadedLayouts[] = {
    {Layout::contiguous, Layout::contiguous},
    {Layout::transposed, Layout::sliced},
    {Layout::broadcast, Layout::contiguous},
    {Layout::sliced, Layout::broadcast}};

void run_patterns(Backend& backend, const BinarySpec& s, DType dt,
                  const std::vector<Pattern>& patterns,
                  const LayoutPair* layouts, size_t nlayouts, uint64_t& seed) {
  for (size_t l = 0; l < nlayouts; ++l) {
    for (const Pattern& p : patterns) {
      Tensor a = random_tensor(p.first, dt, backend, seed++, layouts[l].first,
                               s.lo, s.hi);
      Tensor b = random_tensor(p.second, dt, backend, seed++, layouts[l].second,
                               s.lo, s.hi);
      check(s, a, b,
            fmt::format("{} {}{} {} with {} {}", name(s.op), name(dt),
                        to_string(p.first), name(layouts[l].first),
                        to_string(p.second), name(layouts[l].second)));
    }
  }
}

// Every pair of special values, laid out as [K, 1] x [1, K] (one operand
// broadcast along rows), [1, K] x [K, 1], and both contiguous [K, K].
void run_specials(Backend& backend, const BinarySpec& s, DType dt) {
  std::vector<double> sv = {NAN,  INFINITY, -INFINITY, 0.0,   -0.0, 1.0,   -1.0,
                            2.5,  -3.0,     0.5,       1e-40, 3e38, -3e38, 1e30,
                            -7.0, 4.0,      0.25,      -0.5,  2.0};
  if (s.op == BinaryOp::pow) sv.insert(sv.end(), {-2.0, 3.0, -1.5, 0.75});
  const int64_t k = int64_t(sv.size());
  Tensor col = from_vector(sv, {k, 1}, backend).cast(dt);
  Tensor row = from_vector(sv, {1, k}, backend).cast(dt);
  std::string base = fmt::format("{} {} specials", name(s.op), name(dt));
  check(s, col, row, base + " column x row");
  check(s, row, col, base + " row x column");
  check(s, col.expand({k, k}).contiguous(), row.expand({k, k}).contiguous(),
        base + " contiguous");
}

void run(Backend& backend, BinaryOp op) {
  const BinarySpec& s = spec(op);
  uint64_t seed = 1;
  for (DType dt : kAllDTypes) {
    if (!accepts(s, dt, dt)) continue;
    run_patterns(backend, s, dt, small_patterns(), kSmallLayouts,
                 std::size(kSmallLayouts), seed);
    // powl is slow: pow runs the threaded shapes on f32 only.
    if (threaded_dtype(dt) && (op != BinaryOp::pow || dt == DType::f32)) {
      run_patterns(backend, s, dt, threaded_patterns(), kThreadedLayouts,
                   std::size(kThreadedLayouts), seed);
    }
    if (is_floating(dt)) run_specials(backend, s, dt);
  }
  if (coverage().large_shapes) {
    std::vector<Pattern> large = {
        {{kLargeSize}, {kLargeSize}}, {{kLargeSize}, {}}, {{}, {kLargeSize}}};
    LayoutPair contiguous = {Layout::contiguous, Layout::contiguous};
    run_patterns(backend, s, DType::f32, large, &contiguous, 1, seed);
  }
  // Mixed dtypes: every pair the op accepts, promoted.
  for (DType da : kAllDTypes) {
    for (DType db : kAllDTypes) {
      if (!accepts(s, da, db)) continue;
      Tensor a = random_tensor({3, 5}, da, backend, seed++, Layout::contiguous,
                               s.lo, s.hi);
      Tensor b = random_tensor({5}, db, backend, seed++, Layout::contiguous,
                               s.lo, s.hi);
      check(s, a, b,
            fmt::format("{} {} with {}", name(op), name(da), name(db)));
    }
  }
}

// Scalar operands take the tensor's dtype, except that a fractional scalar
// with an integer or bool tensor gives f32 and bool with an integer scalar
// gives i64 (ops.h).
DType scalar_dtype(const BinarySpec& s, DType t, bool fractional) {
  if (fractional && !is_floating(t)) return DType::f32;
  if (t == DType::boolean && s.kind != Kind::logical) return DType::i64;
  return t;
}

void run_scalars(Backend& backend, BinaryOp op) {
  const BinarySpec& s = spec(op);
  uint64_t seed = 100;
  for (DType dt : kAllDTypes) {
    for (double v : {3.0, 2.5, -0.75, 0.0}) {
      const bool fractional = v != std::floor(v);
      DType sd = scalar_dtype(s, dt, fractional);
      if (!accepts(s, dt, sd)) continue;
      Scalar scalar = fractional ? Scalar(v) : Scalar(int64_t(v));
      for (const Shape& shape : {Shape{}, Shape{13}, Shape{kLargeSize}}) {
        if (shape == Shape{kLargeSize} &&
            (dt != DType::f32 || v != 2.5 || !coverage().large_shapes)) {
          continue;
        }
        Tensor t = random_tensor(shape, dt, backend, seed++, Layout::contiguous,
                                 s.lo, s.hi);
        Tensor sv = full({}, scalar, backend, sd);
        std::string label = fmt::format("{} {}{} and scalar {}", name(op),
                                        name(dt), to_string(shape), v);
        check_result(s, t, sv, binary(op, t, scalar), label + " (right)");
        check_result(s, sv, t, binary(op, scalar, t), label + " (left)");
      }
    }
  }
}

// Wrapping integer arithmetic at the type's edges, with explicit unsigned
// arithmetic as the reference.
template <class T>
void int_edges(Backend& backend, BinaryOp op) {
  using U = std::make_unsigned_t<T>;
  std::vector<T> e = {std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::max(),
                      T(0),
                      T(1),
                      T(-1),
                      T(100)};
  const int64_t k = int64_t(e.size());
  Tensor a = from_vector(e, {k, 1}, backend);
  Tensor b = from_vector(e, {1, k}, backend);
  std::vector<T> got = binary(op, a, b).template to_vector<T>();
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      U x = U(e[size_t(i)]), y = U(e[size_t(j)]);
      U want = op == BinaryOp::add   ? U(x + y)
               : op == BinaryOp::sub ? U(x - y)
                                     : U(x * y);
      EXPECT_EQ(got[size_t(i * k + j)], T(want))
          << name(op) << " " << name(dtype_of<T>) << " " << int64_t(x) << ", "
          << int64_t(y);
    }
  }
}

void int_edges(Backend& backend, BinaryOp op) {
  int_edges<int32_t>(backend, op);
  int_edges<int64_t>(backend, op);
  int_edges<uint8_t>(backend, op);
}

// One case per line: CONFORMANCE_CASE names its functions by __LINE__.
#define BINARY_CASE(op_name)                                       \
  CONFORMANCE_CASE(op_name, "all dtypes, layouts, broadcasting") { \
    run(backend, BinaryOp::op_name);                               \
  }
#define SCALAR_CASE(op_name)                     \
  CONFORMANCE_CASE(op_name, "scalar operands") { \
    run_scalars(backend, BinaryOp::op_name);     \
  }

BINARY_CASE(add)
SCALAR_CASE(add)
BINARY_CASE(sub)
SCALAR_CASE(sub)
BINARY_CASE(mul)
SCALAR_CASE(mul)
BINARY_CASE(div)
SCALAR_CASE(div)
BINARY_CASE(pow)
SCALAR_CASE(pow)
BINARY_CASE(maximum)
SCALAR_CASE(maximum)
BINARY_CASE(minimum)
SCALAR_CASE(minimum)
BINARY_CASE(eq)
SCALAR_CASE(eq)
BINARY_CASE(ne)
SCALAR_CASE(ne)
BINARY_CASE(lt)
SCALAR_CASE(lt)
BINARY_CASE(le)
SCALAR_CASE(le)
BINARY_CASE(gt)
SCALAR_CASE(gt)
BINARY_CASE(ge)
SCALAR_CASE(ge)
BINARY_CASE(logical_and)
SCALAR_CASE(logical_and)
BINARY_CASE(logical_or)
SCALAR_CASE(logical_or)
BINARY_CASE(logical_xor)
SCALAR_CASE(logical_xor)

#undef SCALAR_CASE
#undef BINARY_CASE

CONFORMANCE_CASE(add, "integers wrap at the type's edges") {
  int_edges(backend, BinaryOp::add);
}
CONFORMANCE_CASE(sub, "integers wrap at the type's edges") {
  int_edges(backend, BinaryOp::sub);
}
CONFORMANCE_CASE(mul, "integers wrap at the type's edges") {
  int_edges(backend, BinaryOp::mul);
}

CONFORMANCE_CASE(add, "named functions and operators") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3}, backend);
  Tensor b = from_vector(std::vector<float>{4, 8, 16}, backend);
  using V = std::vector<float>;
  EXPECT_EQ((a + b).to_vector<float>(), (V{5, 10, 19}));
  EXPECT_EQ((a - b).to_vector<float>(), (V{-3, -6, -13}));
  EXPECT_EQ((a * b).to_vector<float>(), (V{4, 16, 48}));
  EXPECT_EQ((a / b).to_vector<float>(), (V{0.25f, 0.25f, 0.1875f}));
  EXPECT_EQ((a + 1).to_vector<float>(), (V{2, 3, 4}));
  EXPECT_EQ((10 - a).to_vector<float>(), (V{9, 8, 7}));
  EXPECT_EQ((a * 0.5).to_vector<float>(), (V{0.5f, 1, 1.5f}));
  EXPECT_EQ((3 / a).to_vector<float>(), (V{3, 1.5f, 1}));
  EXPECT_EQ((-a).to_vector<float>(), (V{-1, -2, -3}));
  EXPECT_EQ(maximum(a, 2).to_vector<float>(), (V{2, 2, 3}));
  EXPECT_EQ(minimum(a, 2).to_vector<float>(), (V{1, 2, 2}));
  Tensor e = from_vector(std::vector<float>{4, 8, 2}, backend);
  EXPECT_EQ(pow(a, e).to_vector<float>(), (V{1, 256, 9}));
  using B = std::vector<bool>;
  EXPECT_EQ(eq(a, 2).to_vector<bool>(), (B{false, true, false}));
  EXPECT_EQ(ne(a, 2).to_vector<bool>(), (B{true, false, true}));
  EXPECT_EQ(lt(a, 2).to_vector<bool>(), (B{true, false, false}));
  EXPECT_EQ(le(a, 2).to_vector<bool>(), (B{true, true, false}));
  EXPECT_EQ(gt(a, 2).to_vector<bool>(), (B{false, false, true}));
  EXPECT_EQ(ge(a, 2).to_vector<bool>(), (B{false, true, true}));
}

// --- where -------------------------------------------------------------

void check_where(const Tensor& c, const Tensor& a, const Tensor& b,
                 const Tensor& y, const std::string& label) {
  DType dt = promote_types(a.dtype(), b.dtype());
  ASSERT_EQ(y.dtype(), dt) << label;
  Shape shape = broadcast_shapes(broadcast_shapes(c.shape(), a.shape(), "test"),
                                 b.shape(), "test");
  ASSERT_EQ(y.shape(), shape) << label;
  std::vector<long double> vc = values(c.cast(DType::boolean).expand(shape));
  std::vector<long double> va = values(a.cast(dt).expand(shape));
  std::vector<long double> vb = values(b.cast(dt).expand(shape));
  std::vector<long double> want(vc.size());
  for (size_t i = 0; i < vc.size(); ++i) want[i] = vc[i] != 0 ? va[i] : vb[i];
  // A selection is exact, sign of zero included.
  expect_values(y, want, Bound{0.0, {}, {}, true}, label, [&](size_t i) {
    return fmt::format("cond {}, a = {}, b = {}", double(vc[i]), double(va[i]),
                       double(vb[i]));
  });
}

CONFORMANCE_CASE(where, "all dtypes, layouts, broadcasting") {
  uint64_t seed = 1;
  struct Triple {
    Shape c, a, b;
  };
  std::vector<Triple> triples = {
      {{}, {}, {}},           {{0}, {0}, {0}},
      {{4, 1}, {1, 17}, {}},  {{17}, {4, 17}, {4, 1}},
      {{4, 17}, {}, {17}},    {{4, 17}, {4, 17}, {}},
      {{4, 17}, {}, {4, 17}}, {{2, 3, 5}, {3, 1}, {5}}};
  for (int64_t n = 1; n <= 17; ++n) triples.push_back({{n}, {n}, {n}});
  const Shape& t = kThreadedShape;
  std::vector<Triple> threaded = {
      {t, t, t}, {t, {}, t}, {t, t, {}}, {{t[0], 1}, {1, t[1]}, t}};
  for (DType dt : kAllDTypes) {
    for (Layout layout : kLayouts) {
      auto run_set = [&](const std::vector<Triple>& set) {
        for (const Triple& tr : set) {
          Tensor c = random_tensor(tr.c, DType::boolean, backend, seed++,
                                   layout, -2, 2);
          Tensor a = random_tensor(tr.a, dt, backend, seed++, layout);
          Tensor b =
              random_tensor(tr.b, dt, backend, seed++, Layout::contiguous);
          check_where(c, a, b, where(c, a, b),
                      fmt::format("where {} cond{} a{} b{} {}", name(dt),
                                  to_string(tr.c), to_string(tr.a),
                                  to_string(tr.b), name(layout)));
        }
      };
      run_set(triples);
      if (threaded_dtype(dt)) {
        run_set(threaded);
      }
    }
  }
  for (DType dt : {DType::f32, DType::bf16, DType::f64, DType::u8}) {
    if (!coverage().large_shapes) break;
    Tensor c = random_tensor({kLargeSize}, DType::boolean, backend, 5,
                             Layout::contiguous, -2, 2);
    Tensor a = random_tensor({kLargeSize}, dt, backend, 6);
    Tensor b = random_tensor({kLargeSize}, dt, backend, 7);
    check_where(c, a, b, where(c, a, b),
                fmt::format("where {} large", name(dt)));
    Tensor s = full({}, 2, backend, dt);
    check_where(c, s, b, where(c, s, b),
                fmt::format("where {} large, scalar a", name(dt)));
    check_where(c, a, s, where(c, a, s),
                fmt::format("where {} large, scalar b", name(dt)));
  }
}

CONFORMANCE_CASE(where, "special values pass through bit for bit") {
  std::vector<double> sv = {NAN, INFINITY, -INFINITY, -0.0,
                            0.0, 1e-40,    3e38,      -1.0};
  for (DType dt : kFloatDTypes) {
    std::vector<double> av, bv;
    std::vector<bool> cv;
    for (int r = 0; r < 5; ++r) {
      for (size_t i = 0; i < sv.size(); ++i) {
        av.push_back(sv[i]);
        bv.push_back(sv[sv.size() - 1 - i]);
        cv.push_back((i + size_t(r)) % 3 == 0);
      }
    }
    Tensor a = from_vector(av, backend).cast(dt);
    Tensor b = from_vector(bv, backend).cast(dt);
    Tensor c = from_vector(cv, backend);
    check_where(c, a, b, where(c, a, b),
                fmt::format("where {} specials", name(dt)));
  }
}

CONFORMANCE_CASE(where, "cond of any dtype, mixed and scalar operands") {
  Tensor cf = from_vector(std::vector<float>{0.0f, -2.0f, NAN, 0.5f}, backend);
  Tensor a = from_vector(std::vector<int32_t>{1, 2, 3, 4}, backend);
  Tensor b = from_vector(std::vector<float>{-1, -2, -3, -4}, backend);
  check_where(cf, a, b, where(cf, a, b), "where f32 cond, i32 and f32");
  // A fractional scalar with an integer tensor gives f32, as PyTorch.
  Tensor y = where(cf, a, 0.5);
  ASSERT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.5f, 2, 3, 4}));
  Tensor yi = where(cf, a, 7);
  ASSERT_EQ(yi.dtype(), DType::i32);
  EXPECT_EQ(yi.to_vector<int32_t>(), (std::vector<int32_t>{7, 2, 3, 4}));
  // masked_fill keeps the tensor's dtype.
  Tensor m = masked_fill(a, gt(a, 2), -1);
  ASSERT_EQ(m.dtype(), DType::i32);
  EXPECT_EQ(m.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, -1, -1}));
  Tensor x2 =
      from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, backend);
  Tensor mask = from_vector(std::vector<bool>{true, false, true}, backend);
  EXPECT_EQ(masked_fill(x2, mask, 0.5).to_vector<float>(),
            (std::vector<float>{0.5f, 2, 0.5f, 0.5f, 5, 0.5f}));
}

}  // namespace
}  // namespace nascent::conformance
