// Conformance cases for max and average pooling and their backwards,
// against float64 loops written from the definition (conv_reference.cpp).
#include <cmath>
#include <limits>

#include "conformance/conv_reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

struct PoolConfig {
  const char* label;
  Shape x;
  Pool2dParams p;
};

Pool2dParams params(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                    int64_t ph = 0, int64_t pw = 0) {
  Pool2dParams p;
  p.kernel[0] = kh, p.kernel[1] = kw;
  p.stride[0] = sh, p.stride[1] = sw;
  p.padding[0] = ph, p.padding[1] = pw;
  return p;
}

const PoolConfig kConfigs[] = {
    {"2x2 stride 2", {2, 3, 8, 8}, params(2, 2, 2, 2)},
    {"odd input drops the last row", {1, 2, 7, 9}, params(2, 2, 2, 2)},
    {"3x3 stride 2 pad 1", {1, 2, 7, 9}, params(3, 3, 2, 2, 1, 1)},
    {"non-square", {3, 2, 5, 6}, params(3, 2, 1, 2, 1, 1)},
    {"overlapping stride 1 pad", {2, 2, 4, 5}, params(2, 3, 1, 1, 1, 1)},
    {"stride 3", {2, 1, 6, 7}, params(3, 3, 3, 3)},
    {"1x1", {1, 4, 1, 1}, params(1, 1, 1, 1)},
    {"kernel larger than stride, one row",
     {1, 3, 3, 10},
     params(3, 4, 1, 3, 0, 2)},
    {"many planes (threads)", {4, 16, 30, 31}, params(2, 2, 2, 2)},
    // Rows long enough for full SIMD vectors, with edge columns either side.
    {"wide rows stride 1", {1, 2, 5, 40}, params(3, 3, 1, 1, 1, 1)},
    {"wide rows stride 2", {1, 2, 6, 41}, params(3, 2, 2, 2, 1, 1)},
    {"empty batch", {0, 2, 4, 4}, params(2, 2, 2, 2)},
};

constexpr DType kDTypes[] = {DType::f32, DType::f64};

std::string label(const PoolConfig& c, DType dt, Layout layout,
                  const char* extra = "") {
  return fmt::format("{}{}: x {} {} {}", c.label, extra, to_string(c.x),
                     name(dt), name(layout));
}

void expect_indices(const Tensor& got, const std::vector<int64_t>& want,
                    const std::string& what) {
  EXPECT_EQ(got.dtype(), DType::i64) << what;
  EXPECT_EQ(got.to_vector<int64_t>(), want) << what;
}

CONFORMANCE_CASE(max_pool2d, "configurations x dtypes x layouts") {
  uint64_t seed = 500;
  for (const PoolConfig& c : kConfigs) {
    for (DType dt : kDTypes) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor(c.x, dt, backend, ++seed, layout);
        RefMaxPool want = ref_max_pool2d(to_host(x), c.p);
        std::string what = label(c, dt, layout);
        expect_close(max_pool2d(x, c.p), want.value, what, 0.0, 0.0);
        auto [values, indices] = max_pool2d_with_indices(x, c.p);
        expect_close(values, want.value, what, 0.0, 0.0);
        expect_indices(indices, want.indices, what);
      }
    }
  }
}

CONFORMANCE_CASE(max_pool2d, "ties, -inf and NaN as PyTorch") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Constant planes: the first element of each clipped window wins.
  // -inf planes: the same. NaN: it wins, the last one's index. Narrow
  // planes run the scalar code, wide ones the SIMD rows too.
  for (int64_t width : {6, 40}) {
    const int64_t hw = 5 * width;
    std::vector<double> v(size_t(2 * hw), 1.5);
    for (int64_t i = hw; i < 2 * hw; ++i) v[size_t(i)] = -inf;
    for (int64_t i : {int64_t(7), int64_t(8), width + 20, hw + width + 9}) {
      v[size_t(i)] = nan;
    }
    for (Pool2dParams p : {params(3, 3, 2, 2, 1, 1), params(2, 3, 1, 1)}) {
      for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        Tensor x = from_vector(v, {1, 2, 5, width}, backend).cast(dt);
        RefMaxPool want = ref_max_pool2d(to_host(x), p);
        auto [values, indices] = max_pool2d_with_indices(x, p);
        EXPECT_EQ(values.dtype(), dt);
        std::string what = fmt::format("{} width {}", name(dt), width);
        expect_close(values, want.value, what, 0.0, 0.0);
        expect_indices(indices, want.indices, what);
      }
    }
  }
}

CONFORMANCE_CASE(max_pool2d, "f16 and bf16 exact") {
  for (DType dt : {DType::f16, DType::bf16}) {
    const PoolConfig& c = kConfigs[2];
    Tensor x = random_tensor(c.x, dt, backend, 3, Layout::transposed);
    RefMaxPool want = ref_max_pool2d(to_host(x), c.p);
    expect_close(max_pool2d(x, c.p), want.value, name(dt), 0.0, 0.0);
  }
}

CONFORMANCE_CASE(avg_pool2d, "configurations x dtypes x layouts x pad") {
  uint64_t seed = 600;
  for (const PoolConfig& base : kConfigs) {
    for (bool include_pad : {true, false}) {
      PoolConfig c = base;
      c.p.count_include_pad = include_pad;
      const char* extra = include_pad ? "" : " (pad not counted)";
      for (DType dt : kDTypes) {
        for (Layout layout : kLayouts) {
          Tensor x = random_tensor(c.x, dt, backend, ++seed, layout);
          expect_close(avg_pool2d(x, c.p), ref_avg_pool2d(to_host(x), c.p),
                       label(c, dt, layout, extra));
        }
      }
      for (DType dt : {DType::f16, DType::bf16}) {
        Tensor x = random_tensor(c.x, dt, backend, ++seed);
        Tensor got = avg_pool2d(x, c.p);
        EXPECT_EQ(got.dtype(), dt);
        expect_close(got, ref_avg_pool2d(to_host(x), c.p),
                     label(c, dt, Layout::contiguous, extra));
      }
    }
  }
}

CONFORMANCE_CASE(max_pool2d_backward, "configurations x dtypes x layouts") {
  uint64_t seed = 700;
  for (const PoolConfig& c : kConfigs) {
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor(c.x, dt, backend, ++seed);
        RefMaxPool forward = ref_max_pool2d(to_host(x), c.p);
        Tensor indices = max_pool2d_with_indices(x, c.p).second;
        Tensor g = random_tensor(indices.shape(), dt, backend, ++seed, layout);
        // Strided indices too: a transposed copy viewed back.
        if (layout == Layout::transposed) {
          indices = indices.transpose(-1, -2).contiguous().transpose(-1, -2);
        }
        HostTensor want =
            ref_max_pool2d_backward(to_host(g), forward.indices, c.x);
        Tensor got = max_pool2d_backward(g, indices, c.x, c.p);
        EXPECT_EQ(got.dtype(), dt);
        expect_close(got, want, label(c, dt, layout));
      }
    }
  }
}

CONFORMANCE_CASE(avg_pool2d_backward, "configurations x dtypes x layouts") {
  uint64_t seed = 800;
  for (const PoolConfig& base : kConfigs) {
    for (bool include_pad : {true, false}) {
      PoolConfig c = base;
      c.p.count_include_pad = include_pad;
      const char* extra = include_pad ? "" : " (pad not counted)";
      Shape out = pool2d_output_shape(c.x, c.p);
      for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        for (Layout layout : kLayouts) {
          Tensor g = random_tensor(out, dt, backend, ++seed, layout);
          Tensor got = avg_pool2d_backward(g, c.x, c.p);
          EXPECT_EQ(got.dtype(), dt);
          expect_close(got, ref_avg_pool2d_backward(to_host(g), c.x, c.p),
                       label(c, dt, layout, extra));
        }
      }
    }
  }
}

double dot(const Tensor& a, const Tensor& b) {
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < va.size(); ++i) s += va[i] * vb[i];
  return s;
}

CONFORMANCE_CASE(avg_pool2d_backward, "adjoint of avg_pool2d (f64)") {
  uint64_t seed = 900;
  for (const PoolConfig& base : kConfigs) {
    for (bool include_pad : {true, false}) {
      Pool2dParams p = base.p;
      p.count_include_pad = include_pad;
      Tensor x = random_tensor(base.x, DType::f64, backend, ++seed);
      Tensor y = avg_pool2d(x, p);
      Tensor g = random_tensor(y.shape(), DType::f64, backend, ++seed);
      EXPECT_NEAR(dot(x, avg_pool2d_backward(g, base.x, p)), dot(y, g),
                  1e-12 * (1.0 + double(y.numel())))
          << base.label;
    }
  }
}

}  // namespace
}  // namespace nascent::conformance
