// Conformance cases for conv2d and its two gradient convolutions, against
// float64 loops written from the definition (conv_reference.cpp).
#include <cmath>

#include "conformance/conv_reference.h"
#include "conformance/registry.h"

namespace nascent::conformance {
namespace {

struct ConvConfig {
  const char* label;
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

Conv2dParams params(int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                    int64_t dh = 1, int64_t dw = 1, int64_t groups = 1) {
  Conv2dParams p;
  p.stride[0] = sh, p.stride[1] = sw;
  p.padding[0] = ph, p.padding[1] = pw;
  p.dilation[0] = dh, p.dilation[1] = dw;
  p.groups = groups;
  return p;
}

// Every path of the CPU kernel (im2col blocks, pointwise, direct), each
// parameter away from 1, odd and non-square sizes, batches that split by
// image (2, 4 with two threads) and that do not (1, 3).
const ConvConfig kConfigs[] = {
    {"3x3 plain", {2, 3, 7, 9}, {4, 3, 3, 3}, params(1, 1, 0, 0), true},
    {"stride 2 pad 1", {3, 4, 8, 7}, {6, 4, 3, 3}, params(2, 2, 1, 1), false},
    {"pad 2 dilation 2",
     {1, 2, 9, 8},
     {3, 2, 3, 3},
     params(1, 1, 2, 2, 2, 2),
     true},
    {"groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, params(1, 1, 1, 1, 1, 1, 2), true},
    {"depthwise",
     {3, 4, 7, 6},
     {4, 1, 3, 3},
     params(1, 1, 1, 1, 1, 1, 4),
     true},
    {"depthwise x2 strided dilated",
     {2, 3, 6, 7},
     {6, 1, 3, 2},
     params(2, 2, 1, 1, 2, 2, 3),
     false},
    {"one input channel", {3, 1, 9, 9}, {5, 1, 3, 3}, params(1, 1, 1, 1), true},
    {"1x1", {2, 5, 4, 6}, {7, 5, 1, 1}, params(1, 1, 0, 0), true},
    {"1x1 groups 2 batch 4",
     {4, 6, 3, 5},
     {4, 3, 1, 1},
     params(1, 1, 0, 0, 1, 1, 2),
     false},
    {"1x1 stride 2", {1, 3, 7, 7}, {2, 3, 1, 1}, params(2, 2, 0, 0), true},
    {"1x1 pad 1", {1, 2, 3, 3}, {2, 2, 1, 1}, params(1, 1, 1, 1), false},
    {"non-square everything",
     {3, 3, 10, 5},
     {2, 3, 2, 4},
     params(2, 1, 1, 2, 1, 2),
     true},
    {"kernel fills padded input",
     {2, 2, 3, 3},
     {3, 2, 5, 5},
     params(1, 1, 1, 1),
     true},
    {"stride 3 drops rows",
     {1, 2, 8, 10},
     {2, 2, 2, 3},
     params(3, 3, 0, 1),
     false},
    {"batch 1 threads split the image",
     {1, 8, 12, 11},
     {6, 8, 3, 3},
     params(1, 1, 1, 1),
     true},
    // K * OW * 8 bytes = 80 KB a row: im2col runs in blocks of rows.
    {"large, im2col in blocks",
     {2, 16, 40, 70},
     {8, 16, 3, 3},
     params(1, 1, 1, 1),
     true},
    // 3x3, stride 1, 16+ channels per group: Winograd F(2x2, 3x3), forward
    // and (flipped) input gradient; odd sizes leave partial tiles.
    {"winograd same, odd sizes",
     {2, 16, 9, 11},
     {16, 16, 3, 3},
     params(1, 1, 1, 1),
     true},
    {"winograd unpadded, groups 2",
     {3, 32, 8, 7},
     {32, 16, 3, 3},
     params(1, 1, 0, 0, 1, 1, 2),
     false},
    {"winograd pad 2, wide rows",
     {1, 16, 6, 40},
     {20, 16, 3, 3},
     params(1, 1, 2, 1),
     true},
    // Planes of one or two tiles, many images per chunk: the input
    // transform's whole vectors of tiles run past each plane into the next
    // images' places and, after the last image, into the room left after
    // each row of the transformed input.
    {"winograd tiny planes, batch 9",
     {9, 16, 2, 3},
     {16, 16, 3, 3},
     params(1, 1, 1, 1),
     true},
    // Fewer output than input channels: the stride-1 input gradient runs as
    // a forward convolution with the flipped kernel.
    {"narrowing, dilated",
     {2, 6, 9, 10},
     {2, 6, 3, 3},
     params(1, 1, 2, 1, 2, 1),
     true},
    {"narrowing, groups 2",
     {1, 8, 7, 7},
     {4, 4, 3, 3},
     params(1, 1, 1, 1, 1, 1, 2),
     false},
    // A widening "same" conv: col2im adds each tap as one run, in blocks.
    {"widening same conv, col2im in blocks",
     {1, 8, 60, 70},
     {12, 8, 3, 3},
     params(1, 1, 1, 1),
     false},
    // Strided, so the input gradient goes through col2im, in blocks too.
    {"large strided, col2im in blocks",
     {1, 16, 41, 300},
     {8, 16, 3, 3},
     params(2, 2, 1, 1),
     false},
    {"empty batch", {0, 3, 5, 5}, {2, 3, 3, 3}, params(1, 1, 0, 0), true},
};

constexpr DType kDTypes[] = {DType::f32, DType::f64};

std::string label(const ConvConfig& c, DType dt, Layout layout) {
  return fmt::format("{}: x {} w {} {} {}", c.label, to_string(c.x),
                     to_string(c.w), name(dt), name(layout));
}

CONFORMANCE_CASE(conv2d, "configurations x dtypes x layouts") {
  uint64_t seed = 100;
  for (const ConvConfig& c : kConfigs) {
    for (DType dt : kDTypes) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor(c.x, dt, backend, ++seed, layout);
        // The weight takes the transposed layout when x is broadcast, so
        // both operands see a strided case.
        Layout wl = layout == Layout::broadcast ? Layout::transposed : layout;
        Tensor w = random_tensor(c.w, dt, backend, ++seed, wl);
        Tensor b = random_tensor({c.w[0]}, dt, backend, ++seed);
        HostTensor hb = to_host(b);
        RefResult want =
            ref_conv2d(to_host(x), to_host(w), c.bias ? &hb : nullptr, c.p);
        Tensor got = conv2d(x, w, c.bias ? &b : nullptr, c.p);
        EXPECT_EQ(got.dtype(), dt);
        expect_close_sums(got, want, label(c, dt, layout));
      }
    }
  }
}

CONFORMANCE_CASE(conv2d, "f16 and bf16 compute in f32") {
  for (DType dt : {DType::f16, DType::bf16}) {
    for (const ConvConfig& c : {kConfigs[1], kConfigs[4], kConfigs[7]}) {
      Tensor x = random_tensor(c.x, dt, backend, 7, Layout::sliced);
      Tensor w = random_tensor(c.w, dt, backend, 8);
      Tensor b = random_tensor({c.w[0]}, dt, backend, 9);
      HostTensor hb = to_host(b);
      Tensor got = conv2d(x, w, &b, c.p);
      EXPECT_EQ(got.dtype(), dt);
      expect_close_sums(got, ref_conv2d(to_host(x), to_host(w), &hb, c.p),
                        label(c, dt, Layout::sliced));
      Tensor g = random_tensor(got.shape(), dt, backend, 10);
      Tensor dx = conv2d_backward_input(g, w, c.x, c.p);
      EXPECT_EQ(dx.dtype(), dt);
      expect_close_sums(
          dx, ref_conv2d_backward_input(to_host(g), to_host(w), c.x, c.p),
          "backward_input " + label(c, dt, Layout::contiguous));
      Tensor dw = conv2d_backward_weight(x, g, c.w, c.p);
      EXPECT_EQ(dw.dtype(), dt);
      expect_close_sums(
          dw, ref_conv2d_backward_weight(to_host(x), to_host(g), c.w, c.p),
          "backward_weight " + label(c, dt, Layout::sliced));
    }
  }
}

CONFORMANCE_CASE(conv2d, "sums each tap once: all-ones") {
  // Every output of an all-ones conv counts its in-bounds taps: catches a
  // tap added twice or skipped even where random values could hide it.
  Conv2dParams p = params(2, 1, 1, 2, 2, 1);
  Tensor x = full({2, 3, 6, 5}, 1.0, backend);
  Tensor w = full({4, 3, 3, 2}, 1.0, backend);
  Tensor got = conv2d(x, w, nullptr, p);
  RefResult want = ref_conv2d(to_host(x), to_host(w), nullptr, p);
  expect_close(got, want.value, "all-ones", 0.0, 0.0);
}

CONFORMANCE_CASE(conv2d_backward_input, "configurations x dtypes x layouts") {
  uint64_t seed = 200;
  for (const ConvConfig& c : kConfigs) {
    Shape out = conv2d_output_shape(c.x, c.w, c.p);
    for (DType dt : kDTypes) {
      for (Layout layout : kLayouts) {
        Tensor g = random_tensor(out, dt, backend, ++seed, layout);
        Layout wl = layout == Layout::broadcast ? Layout::sliced : layout;
        Tensor w = random_tensor(c.w, dt, backend, ++seed, wl);
        RefResult want =
            ref_conv2d_backward_input(to_host(g), to_host(w), c.x, c.p);
        Tensor got = conv2d_backward_input(g, w, c.x, c.p);
        EXPECT_EQ(got.dtype(), dt);
        expect_close_sums(got, want, label(c, dt, layout));
      }
    }
  }
}

CONFORMANCE_CASE(conv2d_backward_weight, "configurations x dtypes x layouts") {
  uint64_t seed = 300;
  for (const ConvConfig& c : kConfigs) {
    Shape out = conv2d_output_shape(c.x, c.w, c.p);
    for (DType dt : kDTypes) {
      for (Layout layout : kLayouts) {
        Tensor x = random_tensor(c.x, dt, backend, ++seed, layout);
        Layout gl = layout == Layout::broadcast ? Layout::transposed : layout;
        Tensor g = random_tensor(out, dt, backend, ++seed, gl);
        RefResult want =
            ref_conv2d_backward_weight(to_host(x), to_host(g), c.w, c.p);
        Tensor got = conv2d_backward_weight(x, g, c.w, c.p);
        EXPECT_EQ(got.dtype(), dt);
        expect_close_sums(got, want, label(c, dt, layout));
      }
    }
  }
}

double dot(const Tensor& a, const Tensor& b) {
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double s = 0;
  for (size_t i = 0; i < va.size(); ++i) s += va[i] * vb[i];
  return s;
}

// <conv2d(x, w), g> = <x, backward_input(g, w)> = <w, backward_weight(x, g)>:
// both gradients are adjoints of the forward, checked in float64 without
// any reference loop.
void check_adjoint(Backend& backend) {
  uint64_t seed = 400;
  for (const ConvConfig& c : kConfigs) {
    Tensor x = random_tensor(c.x, DType::f64, backend, ++seed);
    Tensor w = random_tensor(c.w, DType::f64, backend, ++seed);
    Tensor y = conv2d(x, w, nullptr, c.p);
    Tensor g = random_tensor(y.shape(), DType::f64, backend, ++seed);
    double forward = dot(y, g);
    double via_input = dot(x, conv2d_backward_input(g, w, c.x, c.p));
    double via_weight = dot(w, conv2d_backward_weight(x, g, c.w, c.p));
    double scale = 1e-12 * (1.0 + std::fabs(forward)) * double(y.numel());
    EXPECT_NEAR(via_input, forward, scale) << c.label;
    EXPECT_NEAR(via_weight, forward, scale) << c.label;
  }
}

CONFORMANCE_CASE(conv2d_backward_input, "adjoint of conv2d (f64)") {
  check_adjoint(backend);
}

CONFORMANCE_CASE(conv2d_backward_weight, "zero for an empty batch") {
  Tensor x = random_tensor({0, 2, 4, 4}, DType::f32, backend, 1);
  Tensor g = random_tensor({0, 3, 2, 2}, DType::f32, backend, 2);
  Tensor dw = conv2d_backward_weight(x, g, {3, 2, 3, 3});
  expect_close(dw, HostTensor{{3, 2, 3, 3}, std::vector<double>(54, 0.0)},
               "empty batch", 0.0, 0.0);
}

}  // namespace
}  // namespace nascent::conformance
