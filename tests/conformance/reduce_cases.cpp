// Conformance cases for the reductions and cumsum: every dtype that applies,
// every layout, axes that are adjacent or not, keepdim, 0-d and 0-size
// shapes, sizes that hit the threaded and block-split paths, and inputs that
// break naive formulas (f32 sums of millions, var of large offsets,
// logsumexp of 1e4, NaN and infinities).
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/ranges.h>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

constexpr DType kFloat[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                          DType::i32, DType::i64, DType::u8,  DType::boolean};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Group = std::vector<double>;
using RefFn = std::function<double(const Group&)>;

// Reference: groups x's values by output element (row-major over the
// reduced axes within a group) and applies fn to each group.
HostTensor ref_reduce(const HostTensor& x, const Axes& axes, bool keepdim,
                      const RefFn& fn) {
  const std::vector<int> ax = normalize_axes(axes, int(x.shape.size()), "ref");
  Shape kept = x.shape, dropped;
  for (int a : ax) kept[size_t(a)] = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (std::find(ax.begin(), ax.end(), int(d)) == ax.end()) {
      dropped.push_back(x.shape[d]);
    }
  }
  std::vector<Group> groups(size_t(numel(kept)));
  size_t k = 0;
  for_each_index(x.shape, [&](const std::vector<int64_t>& idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      flat = flat * kept[d] + (kept[d] == 1 ? 0 : idx[d]);
    }
    groups[size_t(flat)].push_back(x.v[k++]);
  });
  HostTensor out{keepdim ? kept : dropped, {}};
  for (const Group& g : groups) out.v.push_back(fn(g));
  return out;
}

double ref_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double ref_mean(const Group& g) {
  return ref_sum(g) / double(g.size());
}
double ref_var(const Group& g, int64_t correction) {
  const double m = ref_mean(g);
  double s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / std::max(0.0, double(g.size()) - double(correction));
}
double ref_max(const Group& g) {
  double m = -kInf;
  for (double v : g) {
    if (std::isnan(v)) return v;
    m = std::max(m, v);
  }
  return m;
}
double ref_min(const Group& g) {
  double m = kInf;
  for (double v : g) {
    if (std::isnan(v)) return v;
    m = std::min(m, v);
  }
  return m;
}
double ref_prod(const Group& g) {
  double p = 1;
  for (double v : g) p *= v;
  return p;
}
double ref_logsumexp(const Group& g) {
  const double m = ref_max(g);
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}
double ref_arg(const Group& g, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return double(i);
    if (is_max ? g[i] > g[best] : g[i] < g[best]) best = i;
  }
  return double(best);
}

struct AxesCase {
  Shape shape;
  Axes axes;
  bool large = false;
};

// Small cases cover the shapes of the problem; large ones the SIMD tails,
// the outer (column) path, the block split and the thread pool.
const std::vector<AxesCase>& axes_cases() {
  static const std::vector<AxesCase> cases = {
      {{}, {}},
      {{7}, {}},
      {{7}, {-1}},
      {{3, 5}, {0}},
      {{3, 5}, {1}},
      {{3, 5}, {}},
      {{4, 1, 6}, {1}},
      {{4, 1, 6}, {0, 2}},
      {{2, 3, 4, 5}, {0, 2}},
      {{2, 3, 4, 5}, {1, 3}},
      {{2, 3, 4, 5}, {1, 2}},
      {{2, 3, 4, 5}, {-1}},
      {{2, 3, 4, 5}, {0}},
      {{2, 3, 4, 5}, {0, 1, 3}},
      {{37, 129}, {1}},
      {{129, 37}, {0}},
      {{6, 50, 33}, {0, 2}},
      {{2, 70001}, {1}, true},
      {{70001, 3}, {0}, true},
      {{160, 1030}, {}, true},
      {{600, 1030}, {0}, true},
      {{2, 700, 50}, {0, 1}, true},
  };
  return cases;
}

// The large cases run for one dtype of each kernel family (f32 SIMD, f16
// SIMD with conversions, integer scalar loops) to keep the suite quick.
bool runs_large(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::i64;
}

// The reference rounded to the output dtype (an f16 sum may overflow).
HostTensor round_to(HostTensor h, DType dtype) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (double& v : h.v) v = to_double(from_double<T>(v));
  });
  return h;
}

// Summation error grows with the sum of |x|, not with the result: this
// much of it is allowed (f32 accumulation for f32/f16/bf16 inputs).
double sum_eps(DType dtype) {
  return dtype == DType::f64 ? 1e-14 : 1e-6;
}

// Runs `op` on every case, dtype and layout against `ref`. `want` maps the
// input dtype to the expected output dtype. `scale`, if given, is the
// magnitude the accumulation error scales with (sum of |x|).
void check_all(
    Backend& backend, const char* label, const std::vector<DType>& dtypes,
    const std::function<Tensor(const Tensor&, const Axes&, bool)>& op,
    const RefFn& ref, const std::function<DType(DType)>& want,
    double low = -2.0, double high = 2.0, double tol_scale = 1.0,
    int64_t max_reduced = -1, const RefFn& scale = nullptr) {
  uint64_t seed = 100;
  for (DType dt : dtypes) {
    for (Layout layout : kLayouts) {
      int i = 0;
      for (const AxesCase& c : axes_cases()) {
        const bool keepdim = (i++ % 2) == 1;
        if (c.large && !runs_large(dt)) continue;
        const std::vector<int> ax =
            normalize_axes(c.axes, int(c.shape.size()), "test");
        int64_t reduced = 1;
        for (int a : ax) reduced *= c.shape[size_t(a)];
        if (max_reduced >= 0 && reduced > max_reduced) continue;
        Tensor x =
            random_tensor(c.shape, dt, backend, ++seed, layout, low, high);
        Tensor y = op(x, c.axes, keepdim);
        const std::string what = fmt::format(
            "{} {} {} axes [{}] keepdim {} ({})", label, name(dt),
            to_string(c.shape), fmt::join(c.axes, ", "), keepdim, name(layout));
        ASSERT_EQ(y.dtype(), want(dt)) << what;
        const HostTensor hx = to_host(x);
        const HostTensor expected =
            round_to(ref_reduce(hx, c.axes, keepdim, ref), y.dtype());
        if (!is_floating(y.dtype())) {
          expect_close(y, expected, what, 0.0, 0.0);
          continue;
        }
        const double rtol = default_rtol(y.dtype()) * tol_scale;
        const double atol = default_atol(y.dtype()) * tol_scale;
        if (!scale) {
          expect_close(y, expected, what, rtol, atol);
          continue;
        }
        const HostTensor mag = ref_reduce(hx, c.axes, keepdim, scale);
        const std::vector<double> got = y.to_vector<double>();
        ASSERT_EQ(y.shape(), expected.shape) << what;
        int bad = 0;
        for (size_t k = 0; k < got.size(); ++k) {
          const double e = expected.v[k];
          const double tol =
              atol + rtol * std::fabs(e) + sum_eps(dt) * mag.v[k];
          const bool ok = std::isnan(e)      ? std::isnan(got[k])
                          : std::isfinite(e) ? std::fabs(got[k] - e) <= tol
                                             : got[k] == e;
          if (!ok && ++bad <= 3) {
            ADD_FAILURE() << what << ": element " << k << " is " << got[k]
                          << ", expected " << e << " (tolerance " << tol << ")";
          }
        }
      }
    }
  }
}

double abs_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += std::fabs(v);
  return s;
}
double abs_mean(const Group& g) {
  return abs_sum(g) / double(g.size());
}

DType same(DType d) {
  return d;
}
DType sum_dtype(DType d) {
  return is_floating(d) ? d : DType::i64;
}
DType float_dtype(DType d) {
  return to_floating(d);
}

std::vector<DType> all() {
  return {std::begin(kAll), std::end(kAll)};
}
std::vector<DType> floats_and_int() {
  return {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32};
}

CONFORMANCE_CASE(sum, "every dtype, axes, layouts, keepdim") {
  check_all(
      backend, "sum", all(),
      [](const Tensor& x, const Axes& a, bool k) { return sum(x, a, k); },
      ref_sum, sum_dtype, -2.0, 2.0, 1.0, -1, abs_sum);
}

CONFORMANCE_CASE(sum, "f32 sum of 8M stays accurate; empty sums") {
  // Uniform [0, 1): a plain f32 running sum is off by ~1e-4 here.
  Generator gen(5);
  Tensor x = uniform({1 << 23}, 0.0, 1.0, backend, gen, DType::f32);
  const HostTensor hx = to_host(x);
  expect_close(sum(x), HostTensor{{}, {ref_sum(hx.v)}}, "sum 8M", 2e-7, 0.0);
  expect_close(mean(x), HostTensor{{}, {ref_mean(hx.v)}}, "mean 8M", 2e-7, 0.0);
  // An empty axis: sum 0, prod 1, mean NaN, logsumexp -inf.
  Tensor e = zeros({0, 3}, backend);
  expect_close(sum(e, {0}), HostTensor{{3}, {0, 0, 0}}, "sum empty");
  expect_close(sum(e), HostTensor{{}, {0}}, "sum empty all");
  expect_close(prod(e, {0}), HostTensor{{3}, {1, 1, 1}}, "prod empty");
  expect_close(mean(e, {0}), HostTensor{{3}, {kNaN, kNaN, kNaN}}, "mean empty");
  expect_close(logsumexp(e, {0}), HostTensor{{3}, {-kInf, -kInf, -kInf}},
               "logsumexp empty");
  EXPECT_EQ(sum(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(sum(zeros({0}, backend, DType::i32)).item<int64_t>(), 0);
}

CONFORMANCE_CASE(mean, "floats and ints as f32") {
  check_all(
      backend, "mean", floats_and_int(),
      [](const Tensor& x, const Axes& a, bool k) { return mean(x, a, k); },
      ref_mean, float_dtype, -2.0, 2.0, 1.0, -1, abs_mean);
}

CONFORMANCE_CASE(max, "every dtype; NaN wins") {
  check_all(
      backend, "max", all(),
      [](const Tensor& x, const Axes& a, bool k) { return max(x, a, k); },
      ref_max, same);
  // NaN in the SIMD body, in the scalar tail, in an outer reduction and in a
  // strided (scalar) one, for every floating dtype.
  for (DType dt : kFloat) {
    for (int64_t pos : {int64_t(3), int64_t(1000), int64_t(1028)}) {
      std::vector<double> v(1030);
      for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 17) - 8.0;
      v[size_t(pos)] = kNaN;
      Tensor x = from_vector(v, {1030}, backend).cast(dt);
      const std::string what = fmt::format("{} NaN at {}", name(dt), pos);
      EXPECT_TRUE(std::isnan(max(x).item<double>())) << what;
      EXPECT_TRUE(std::isnan(min(x).item<double>())) << what;
      EXPECT_EQ(argmax(x).item<int64_t>(), pos) << what;
      EXPECT_EQ(argmin(x).item<int64_t>(), pos) << what;
      Tensor cols = x.reshape({103, 10});
      const std::vector<double> m = max(cols, {0}).to_vector<double>();
      const std::vector<double> mt =
          min(cols.transpose(0, 1), {1}).to_vector<double>();
      const std::vector<int64_t> a =
          argmax(cols.transpose(0, 1), 1).to_vector<int64_t>();
      for (int64_t j = 0; j < 10; ++j) {
        const bool has = j == pos % 10;
        EXPECT_EQ(std::isnan(m[size_t(j)]), has) << what << " col " << j;
        EXPECT_EQ(std::isnan(mt[size_t(j)]), has) << what << " col " << j;
        if (has) {
          EXPECT_EQ(a[size_t(j)], pos / 10) << what;
        }
      }
    }
  }
  // Infinities are ordinary values.
  Tensor inf = from_vector(std::vector<double>{-kInf, 1.0, kInf, 2.0}, backend);
  EXPECT_EQ(max(inf).item<double>(), kInf);
  EXPECT_EQ(min(inf).item<double>(), -kInf);
}

CONFORMANCE_CASE(min, "every dtype") {
  check_all(
      backend, "min", all(),
      [](const Tensor& x, const Axes& a, bool k) { return min(x, a, k); },
      ref_min, same);
}

CONFORMANCE_CASE(prod, "every dtype, small groups") {
  // Values near 1 keep float products finite; at most 40 factors keep
  // integer products exact in the double reference.
  check_all(
      backend, "prod", all(),
      [](const Tensor& x, const Axes& a, bool k) { return prod(x, a, k); },
      ref_prod, sum_dtype, -2.0, 2.0, 1.0, 40);
  check_all(
      backend, "prod near 1", {DType::f32, DType::f64},
      [](const Tensor& x, const Axes& a, bool k) { return prod(x, a, k); },
      ref_prod, same, 0.99, 1.01, 10.0, 2000);
}

CONFORMANCE_CASE(var, "var and std, corrections, large offsets") {
  for (int64_t c : {int64_t(0), int64_t(1), int64_t(2)}) {
    // The large groups once, with the default correction.
    const int64_t limit = c == 1 ? -1 : 1000;
    check_all(
        backend, "var", floats_and_int(),
        [c](const Tensor& x, const Axes& a, bool k) { return var(x, a, c, k); },
        [c](const Group& g) { return ref_var(g, c); }, float_dtype, -2.0, 2.0,
        2.0, limit);
    // std is var plus a square root in the same kernels: small groups.
    check_all(
        backend, "std", floats_and_int(),
        [c](const Tensor& x, const Axes& a, bool k) {
          return nascent::std(x, a, c, k);
        },
        [c](const Group& g) { return std::sqrt(ref_var(g, c)); }, float_dtype,
        -2.0, 2.0, 2.0, 1000);
  }
  // Mean 1e4, spread 1: E[x^2] - mean^2 in f32 would be pure noise.
  check_all(
      backend, "var offset", {DType::f32, DType::f64},
      [](const Tensor& x, const Axes& a, bool k) { return var(x, a, 1, k); },
      [](const Group& g) { return ref_var(g, 1); }, same, 1e4 - 1.0, 1e4 + 1.0,
      10.0);
  // One element with correction 1: 0/0.
  Tensor one = full({1}, 3.0, backend);
  EXPECT_TRUE(std::isnan(var(one).item<float>()));
}

CONFORMANCE_CASE(logsumexp, "stable for large values, infinities") {
  check_all(
      backend, "logsumexp", floats_and_int(),
      [](const Tensor& x, const Axes& a, bool k) { return logsumexp(x, a, k); },
      ref_logsumexp, float_dtype);
  check_all(
      backend, "logsumexp 1e4", {DType::f32, DType::f64},
      [](const Tensor& x, const Axes& a, bool k) { return logsumexp(x, a, k); },
      ref_logsumexp, same, -1e4, 1e4);
  Tensor x = from_vector(
      std::vector<float>{1e4f, 1e4f, -float(kInf), 1e4f - 1.0f}, backend);
  EXPECT_NEAR(logsumexp(x).item<float>(), 1e4 + std::log(2.0 + std::exp(-1.0)),
              1e-3);
  Tensor rows = from_vector(
      std::vector<double>{-kInf, -kInf, kInf, 1.0, kNaN, 1.0, 0.0, 0.0}, {4, 2},
      backend);
  expect_close(logsumexp(rows, {1}),
               HostTensor{{4}, {-kInf, kInf, kNaN, std::log(2.0)}},
               "logsumexp special rows");
}

CONFORMANCE_CASE(argmax, "every dtype, one axis and flattened, first tie") {
  for (DType dt : kAll) {
    for (Layout layout : kLayouts) {
      for (const AxesCase& c : axes_cases()) {
        if (c.axes.size() > 1 || (c.large && !runs_large(dt))) continue;
        Tensor x = random_tensor(c.shape, dt, backend, 7, layout);
        const HostTensor hx = to_host(x);
        const std::string what = fmt::format("argmax {} {} ({})", name(dt),
                                             to_string(c.shape), name(layout));
        if (c.axes.empty()) {
          Tensor y = argmax(x);
          EXPECT_EQ(y.dtype(), DType::i64);
          expect_close(y, HostTensor{{}, {ref_arg(hx.v, true)}}, what);
          continue;
        }
        for (bool keepdim : {false, true}) {
          expect_close(
              argmax(x, c.axes[0], keepdim),
              ref_reduce(hx, c.axes, keepdim,
                         [](const Group& g) { return ref_arg(g, true); }),
              what);
        }
      }
    }
  }
}

CONFORMANCE_CASE(argmin, "every dtype, one axis and flattened, first tie") {
  for (DType dt : kAll) {
    for (Layout layout : kLayouts) {
      for (const AxesCase& c : axes_cases()) {
        if (c.axes.size() > 1 || (c.large && !runs_large(dt))) continue;
        Tensor x = random_tensor(c.shape, dt, backend, 9, layout);
        const HostTensor hx = to_host(x);
        const std::string what = fmt::format("argmin {} {} ({})", name(dt),
                                             to_string(c.shape), name(layout));
        if (c.axes.empty()) {
          expect_close(argmin(x), HostTensor{{}, {ref_arg(hx.v, false)}}, what);
          continue;
        }
        expect_close(
            argmin(x, c.axes[0], true),
            ref_reduce(hx, c.axes, true,
                       [](const Group& g) { return ref_arg(g, false); }),
            what);
      }
    }
  }
}

CONFORMANCE_CASE(cumsum, "every dtype, axis and layout") {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{}, 0},        {{1}, 0},        {{9}, -1},         {{4, 6}, 0},
      {{4, 6}, 1},    {{3, 4, 5}, 1},  {{3, 4, 5}, 0},    {{0, 4}, 1},
      {{2, 3000}, 1}, {{3000, 20}, 0}, {{64, 2, 600}, 2},
  };
  for (DType dt : kAll) {
    for (Layout layout : kLayouts) {
      for (const auto& [shape, axis] : cases) {
        Tensor x = random_tensor(shape, dt, backend, 13, layout);
        Tensor y = cumsum(x, axis);
        EXPECT_EQ(y.dtype(), sum_dtype(dt));
        const HostTensor hx = to_host(x);
        HostTensor want = hx;
        if (!shape.empty()) {
          const int a = normalize_axis(axis, int(shape.size()), "test");
          int64_t inner = 1;
          for (size_t d = size_t(a) + 1; d < shape.size(); ++d) {
            inner *= shape[d];
          }
          for (size_t i = 0; i < want.v.size(); ++i) {
            const int64_t pos = int64_t(i) / inner % shape[size_t(a)];
            if (pos > 0) want.v[i] += want.v[i - size_t(inner)];
          }
        }
        // Long f16/bf16 scans round each output once, from a double sum.
        expect_close(y, want,
                     fmt::format("cumsum {} {} axis {} ({})", name(dt),
                                 to_string(shape), axis, name(layout)),
                     is_floating(dt) ? default_rtol(dt) : 0.0,
                     is_floating(dt) ? default_atol(dt) * 10 : 0.0);
      }
    }
  }
}

}  // namespace
}  // namespace nascent::conformance
