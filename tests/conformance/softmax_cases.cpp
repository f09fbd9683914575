// Conformance cases for softmax and log_softmax: every floating dtype (and
// i32, taken as f32), every layout, the last and inner axes (row and column
// kernels), tails of every SIMD width, threaded sizes, 0-d and 0-size
// shapes, inputs of +-1e4, and NaN/inf rows with PyTorch's results; f16
// and bf16 results rounded to nearest.
#include <cmath>
#include <limits>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor ref_softmax(const HostTensor& x, int64_t axis, bool log) {
  HostTensor y = x;
  if (x.shape.empty()) {
    y.v[0] = log ? x.v[0] - x.v[0] : std::exp(x.v[0] - x.v[0]);
    return y;
  }
  const int a = normalize_axis(axis, int(x.shape.size()), "ref");
  int64_t outer = 1, len = x.shape[size_t(a)], inner = 1;
  for (int d = 0; d < a; ++d) outer *= x.shape[size_t(d)];
  for (size_t d = size_t(a) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t l) { return size_t((o * len + l) * inner + j); };
      double m = -kInf;
      for (int64_t l = 0; l < len; ++l) {
        const double v = x.v[at(l)];
        m = std::isnan(v) || std::isnan(m) ? kNaN : std::max(m, v);
      }
      double s = 0;
      for (int64_t l = 0; l < len; ++l) s += std::exp(x.v[at(l)] - m);
      for (int64_t l = 0; l < len; ++l) {
        const double t = x.v[at(l)] - m;
        y.v[at(l)] = log ? t - std::log(s) : std::exp(t) / s;
      }
    }
  }
  return y;
}

struct AxisCase {
  Shape shape;
  int64_t axis;
};

const std::vector<AxisCase>& axis_cases() {
  static const std::vector<AxisCase> cases = {
      {{}, 0},           {{1}, 0},        {{7}, -1},         {{3, 5}, 0},
      {{3, 5}, 1},       {{2, 3, 4}, 0},  {{2, 3, 4}, 1},    {{2, 3, 4}, 2},
      {{4, 1000}, -1},   {{8, 33, 9}, 1}, {{2, 30, 257}, 1}, {{0, 5}, 1},
      {{5, 0}, 0},       {{5, 0}, 1},     {{300, 515}, -1},  {{300, 515}, 0},
      {{64, 32000}, -1},
  };
  return cases;
}

void check_softmax(Backend& backend, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  uint64_t seed = 40;
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32}) {
    for (Layout layout : kLayouts) {
      for (const AxisCase& c : axis_cases()) {
        for (double range : {2.0, 1e4}) {
          // Large shapes run for f32 and f16 (the two kernel flavours).
          const bool large = numel(c.shape) > 20000;
          if (large && ((dt != DType::f32 && dt != DType::f16) || range > 2)) {
            continue;
          }
          if (range > 2.0 && dt == DType::i32) continue;
          Tensor x = random_tensor(c.shape, dt, backend, ++seed, layout, -range,
                                   range);
          Tensor y = log ? log_softmax(x, c.axis) : softmax(x, c.axis);
          const std::string what =
              fmt::format("{} {} {} axis {} range {} ({})", op, name(dt),
                          to_string(c.shape), c.axis, range, name(layout));
          EXPECT_EQ(y.dtype(), to_floating(dt)) << what;
          const HostTensor want = ref_softmax(to_host(x), c.axis, log);
          expect_close(y, want, what);
          if (range == 2.0) expect_rounded(y, want, what);
        }
      }
    }
  }
  // Rows: a NaN, -inf entries, all -inf, a +inf; a normal row must not be
  // touched by its neighbours. Width 37 puts specials in body and tail.
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    std::vector<double> v(5 * 37);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i));
    v[0 * 37 + 2] = kNaN;
    v[1 * 37 + 5] = -kInf;
    v[1 * 37 + 36] = -kInf;
    for (size_t i = 0; i < 37; ++i) v[2 * 37 + i] = -kInf;
    v[3 * 37 + 35] = kInf;
    Tensor x = from_vector(v, {5, 37}, backend).cast(dt);
    const HostTensor hx = to_host(x);
    for (int64_t axis : {int64_t(1), int64_t(0)}) {
      Tensor xa = axis == 1 ? x : x.transpose(0, 1).contiguous();
      HostTensor ha = axis == 1 ? hx : to_host(xa);
      expect_close(log ? log_softmax(xa, axis == 1 ? 1 : 0)
                       : softmax(xa, axis == 1 ? 1 : 0),
                   ref_softmax(ha, axis == 1 ? 1 : 0, log),
                   fmt::format("{} special {} axis {}", op, name(dt), axis));
    }
  }
}

CONFORMANCE_CASE(softmax, "dtypes, axes, layouts, 1e4, NaN/inf rows") {
  check_softmax(backend, false);
  // Rows sum to one.
  Tensor y = softmax(random_tensor({16, 3001}, DType::f32, backend, 3), -1);
  for (float s : sum(y, {1}).to_vector<float>()) EXPECT_NEAR(s, 1.0f, 1e-5);
}

CONFORMANCE_CASE(log_softmax, "dtypes, axes, layouts, 1e4, NaN/inf rows") {
  check_softmax(backend, true);
}

}  // namespace
}  // namespace nascent::conformance
