// Conformance cases for layer_norm and rms_norm: every floating dtype (and
// i32, taken as f32), every layout of x, weight and bias present or not,
// one to three normalized axes, SIMD tails, threaded sizes, 0-size rows, and
// rows with a large common offset (where E[x^2] - mean^2 cancels).
#include <cmath>

#include "conformance/reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

// rms: x * rstd * w with rstd = 1/sqrt(mean(x^2) + eps); otherwise
// (x - mean) * rstd * w + b with the biased variance.
HostTensor ref_norm(const HostTensor& x, const HostTensor* w,
                    const HostTensor* b, double eps, int64_t nd, bool rms) {
  int64_t cols = 1;
  for (size_t d = x.shape.size() - size_t(nd); d < x.shape.size(); ++d) {
    cols *= x.shape[d];
  }
  HostTensor y = x;
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.v.data() + r * cols;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < cols; ++j) mean += row[j];
      mean /= double(cols);
    }
    for (int64_t j = 0; j < cols; ++j) {
      var += (row[j] - mean) * (row[j] - mean);
    }
    const double rstd = 1.0 / std::sqrt(var / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      double v = (row[j] - mean) * rstd;
      if (w) v *= w->v[size_t(j)];
      if (b) v += b->v[size_t(j)];
      y.v[size_t(r * cols + j)] = v;
    }
  }
  return y;
}

struct NormCase {
  Shape shape;
  int64_t nd;
};

void check_norm(Backend& backend, bool rms) {
  const char* op = rms ? "rms_norm" : "layer_norm";
  const std::vector<NormCase> cases = {
      {{7}, 1},        {{4, 8}, 1},        {{2, 3, 5}, 2}, {{2, 3, 5}, 3},
      {{3, 1000}, 1},  {{5, 17}, 1},       {{0, 8}, 1},    {{3, 0}, 1},
      {{130, 515}, 1}, {{2, 64, 4099}, 1},
  };
  uint64_t seed = 70;
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32}) {
    for (Layout layout : kLayouts) {
      int i = 0;
      for (const NormCase& c : cases) {
        const Shape ns(c.shape.end() - c.nd, c.shape.end());
        Tensor x = random_tensor(c.shape, dt, backend, ++seed, layout);
        // Alternate the affine parameters; keep them in the input's dtype
        // but as strided views too.
        const int which = i++ % 3;
        Tensor w = random_tensor(ns, dt, backend, ++seed, layout, 0.5, 1.5);
        Tensor b = random_tensor(ns, dt, backend, ++seed, layout);
        const Tensor* wp = which == 2 ? nullptr : &w;
        const Tensor* bp = which == 0 || rms ? nullptr : &b;
        const double eps = which == 1 ? 1e-2 : 1e-5;
        Tensor y =
            rms ? rms_norm(x, wp, eps, c.nd) : layer_norm(x, wp, bp, eps, c.nd);
        const std::string what =
            fmt::format("{} {} {} nd {} weight {} bias {} ({})", op, name(dt),
                        to_string(c.shape), c.nd, wp != nullptr, bp != nullptr,
                        name(layout));
        EXPECT_EQ(y.dtype(), to_floating(dt)) << what;
        const HostTensor hw = to_host(w), hb = to_host(b);
        const HostTensor want = ref_norm(to_host(x), wp ? &hw : nullptr,
                                         bp ? &hb : nullptr, eps, c.nd, rms);
        expect_close(y, want, what, default_rtol(y.dtype()) * 4,
                     default_atol(y.dtype()) * 4);
        // The bias cancels terms of up to ~4: f32's error of those.
        expect_rounded(y, want, what, 1e-5);
      }
    }
  }
  // A common offset of 1e3 on a spread of 1: two passes keep the variance.
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({16, 777}, dt, backend, 3, Layout::contiguous,
                             1e3 - 1.0, 1e3 + 1.0);
    Tensor y = rms ? rms_norm(x, nullptr) : layer_norm(x, nullptr, nullptr);
    expect_close(
        y, ref_norm(to_host(x), nullptr, nullptr, rms ? 1e-6 : 1e-5, 1, rms),
        fmt::format("{} offset {}", op, name(dt)), 1e-4, 1e-4);
  }
}

CONFORMANCE_CASE(layer_norm, "dtypes, layouts, affine, axes, offsets") {
  check_norm(backend, false);
}

CONFORMANCE_CASE(rms_norm, "dtypes, layouts, weight, axes, offsets") {
  check_norm(backend, true);
}

}  // namespace
}  // namespace nascent::conformance
