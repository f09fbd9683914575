// Conformance cases for fill, arange, copy and the random ops.
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr DType kAllDTypes[] = {DType::f32,  DType::f64,    DType::f16,
                                DType::bf16, DType::i32,    DType::i64,
                                DType::u8,   DType::boolean};

CONFORMANCE_CASE(fill, "every dtype, edge shapes") {
  for (DType dt : kAllDTypes) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{3, 1, 5}, Shape{70001}}) {
      Tensor t = full(s, 3, backend, dt);
      double want = dt == DType::boolean ? 1.0 : 3.0;
      expect_close(t,
                   HostTensor{s, std::vector<double>(size_t(numel(s)), want)},
                   fmt::format("fill {} {}", name(dt), to_string(s)));
    }
  }
  // Integers keep all 64 bits.
  Tensor big = full({2}, int64_t(1) << 60, backend, DType::i64);
  EXPECT_EQ(big.to_vector<int64_t>()[1], int64_t(1) << 60);
}

CONFORMANCE_CASE(arange, "int and float steps") {
  Tensor a = arange(int64_t(3), int64_t(-8), int64_t(-3), backend, DType::i64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, -3, -6}));
  Tensor b = arange(0.5, 2.0, 0.25, backend, DType::f64);
  HostTensor want{{6}, {0.5, 0.75, 1.0, 1.25, 1.5, 1.75}};
  expect_close(b, want, "arange f64");
  EXPECT_EQ(arange(0, backend).numel(), 0);
}

CONFORMANCE_CASE(copy, "every dtype pair, strided") {
  for (DType from : kAllDTypes) {
    for (Layout layout : kLayouts) {
      Tensor x = random_tensor({5, 7}, from, backend, 11, layout, -3.0, 3.0);
      HostTensor hx = to_host(x);
      for (DType to : kAllDTypes) {
        Tensor y = x.cast(to).contiguous();
        HostTensor want = hx;
        for (double& v : want.v) {
          if (to == DType::boolean) {
            v = v != 0.0;
          } else if (is_integer(to) && is_floating(from)) {
            v = std::trunc(v);  // Saturating, but these values are small.
            if (to == DType::u8) v = std::max(v, 0.0);
          } else if (to == DType::u8) {
            v = double(uint8_t(int64_t(v)));  // Integers wrap, as in C.
          }
        }
        double tol = is_floating(to) ? default_rtol(to) : 0.0;
        expect_close(y, want,
                     fmt::format("copy {} -> {} ({})", name(from), name(to),
                                 name(layout)),
                     tol, tol);
      }
    }
  }
}

CONFORMANCE_CASE(uniform, "range and moments") {
  Generator gen(7);
  Tensor u = uniform({100000}, -1.0, 3.0, backend, gen, DType::f64);
  std::vector<double> v = u.to_vector<double>();
  double sum = 0;
  for (double x : v) {
    ASSERT_GE(x, -1.0);
    ASSERT_LT(x, 3.0);
    sum += x;
  }
  EXPECT_NEAR(sum / double(v.size()), 1.0, 0.02);
  // Element i depends only on (seed, offset + i): a second draw continues.
  Generator g1(7), g2(7);
  Tensor whole = uniform({10}, 0, 1, backend, g1);
  g2.advance(4);
  Tensor tail = uniform({6}, 0, 1, backend, g2);
  std::vector<float> w = whole.to_vector<float>(), t = tail.to_vector<float>();
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(w[i + 4], t[i]);
  // Reference values straight from core's definition.
  std::array<float, 4> ref = uniform4(7, 0);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(w[i], ref[i]);
}

CONFORMANCE_CASE(normal, "moments and reference") {
  Generator gen(3);
  Tensor n = normal({200000}, 2.0, 0.5, backend, gen, DType::f32);
  std::vector<double> v = n.to_vector<double>();
  double s = 0, s2 = 0;
  for (double x : v) s += x, s2 += x * x;
  double m = s / double(v.size());
  EXPECT_NEAR(m, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(s2 / double(v.size()) - m * m), 0.5, 0.01);
  std::array<float, 4> ref = normal4(3, 1);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(v[4 + i], 2.0 + 0.5 * ref[i], 1e-6);
  }
}

CONFORMANCE_CASE(bernoulli, "rate") {
  Generator gen(5);
  Tensor b = bernoulli({100000}, 0.3, backend, gen, DType::f32);
  double sum = 0;
  for (float x : b.to_vector<float>()) {
    ASSERT_TRUE(x == 0.0f || x == 1.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / 100000.0, 0.3, 0.01);
}

}  // namespace
}  // namespace nascent::conformance
