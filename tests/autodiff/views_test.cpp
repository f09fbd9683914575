// Gradchecks of the views core builds without the backend (reshape,
// transpose, slice, expand, ...) and of the shape ops made of views and
// copies into parts of a tensor (cat, stack, split, pad, flip, repeat,
// tril, triu, assign).
#include <gtest/gtest.h>

#include "autodiff/gradcheck.h"

namespace nascent::autodiff::testing {
namespace {

using T = std::vector<Tensor>;

// Views feed mul with a second input so that the gradient depends on
// where each element went.
Tensor weigh(const Tensor& v, uint64_t seed) {
  return mul(v, random(v.shape(), seed));
}

TEST(AutodiffViews, ReshapeFlattenSqueezeUnsqueeze) {
  check_layouts("reshape", {{{3, 4}}}, [](const T& x) {
    return weigh(x[0].reshape({2, 6}), 1);
  });
  check_layouts("flatten", {{{2, 3, 2}}},
                [](const T& x) { return weigh(x[0].flatten(), 2); });
  check("view", {{{3, 4}}}, [](const T& x) {
    return weigh(x[0].view({4, 3}), 3);
  });
  check_layouts("unsqueeze, squeeze", {{{3, 4}}}, [](const T& x) {
    return weigh(x[0].unsqueeze(1).unsqueeze(0).squeeze(0), 4);
  });
  check("squeeze all", {{{1, 3, 1}}},
        [](const T& x) { return weigh(x[0].squeeze(), 5); });
}

TEST(AutodiffViews, TransposePermute) {
  check_layouts("transpose", {{{3, 4}}},
                [](const T& x) { return weigh(x[0].transpose(0, 1), 6); });
  check_layouts("permute", {{{2, 3, 4}}}, [](const T& x) {
    return weigh(x[0].permute({2, 0, 1}), 7);
  });
  check("transpose then reshape (a copy)", {{{3, 4}}}, [](const T& x) {
    return weigh(x[0].transpose(0, 1).reshape({12}), 8);
  });
  check("reshape then transpose", {{{2, 3, 4}}}, [](const T& x) {
    return weigh(x[0].reshape({6, 4}).transpose(0, 1), 9);
  });
}

TEST(AutodiffViews, SliceNarrowSelect) {
  check_layouts("slice with step", {{{5, 6}}},
                [](const T& x) { return weigh(x[0].slice(1, 1, 6, 2), 10); });
  check_layouts("narrow", {{{5, 6}}},
                [](const T& x) { return weigh(x[0].narrow(0, 1, 3), 11); });
  check_layouts("select", {{{5, 6}}},
                [](const T& x) { return weigh(x[0].select(1, 2), 12); });
  // Two slices of one tensor that overlap: their gradients add up.
  check("overlapping slices", {{{6}}}, [](const T& x) {
    return add(weigh(x[0].slice(0, 0, 4), 13), weigh(x[0].slice(0, 2, 6), 14));
  });
}

TEST(AutodiffViews, ExpandBroadcastTo) {
  check("expand", {{{3, 1}}}, [](const T& x) {
    return weigh(x[0].expand({2, 3, 4}), 15);
  });
  check("broadcast_to", {{{4}}}, [](const T& x) {
    return weigh(broadcast_to(x[0], {3, 4}), 16);
  });
  check("expand a transposed view", {{{1, 3}}}, [](const T& x) {
    return weigh(x[0].transpose(0, 1).expand({3, 5}), 17);
  });
}

TEST(AutodiffViews, AsStrided) {
  // Windows that share elements (an unfold): gradients of shared elements
  // add up.
  check("overlapping windows", {{{8}}}, [](const T& x) {
    return weigh(x[0].as_strided({3, 4}, {2, 1}, 0), 18);
  });
  check_layouts("as_strided of a view", {{{4, 6}}}, [](const T& x) {
    Tensor c = x[0].contiguous();
    return weigh(c.as_strided({2, 3}, {7, 2}, 1), 19);
  });
}

TEST(AutodiffViews, CatStackSplitChunk) {
  check_layouts("cat axis 1", {{{2, 3}}, {{2, 4}}}, [](const T& x) {
    return weigh(cat({x[0], x[1]}, 1), 20);
  });
  check("cat of three, one used twice", {{{2, 3}}, {{1, 3}}}, [](const T& x) {
    return weigh(cat({x[0], x[1], x[0]}, 0), 21);
  });
  check("stack", {{{3}}, {{3}}}, [](const T& x) {
    return weigh(stack({x[0], x[1]}, 1), 22);
  });
  check("split", {{{7, 2}}}, [](const T& x) {
    std::vector<Tensor> parts = split(x[0], 3, 0);
    return add(sum(weigh(parts[0], 23)), sum(mul(parts[2], parts[2])));
  });
  check("chunk", {{{2, 6}}}, [](const T& x) {
    std::vector<Tensor> parts = chunk(x[0], 3, 1);
    return mul(parts[0], parts[2]);
  });
}

TEST(AutodiffViews, PadFlipRepeat) {
  check_layouts("pad", {{{3, 4}}}, [](const T& x) {
    return weigh(pad(x[0], {1, 2, 0, 1}), 24);
  });
  check("pad that crops", {{{3, 4}}}, [](const T& x) {
    return weigh(pad(x[0], {-1, 1, 1, -1}, 2.0), 25);
  });
  check_layouts("flip", {{{3, 4}}}, [](const T& x) {
    return weigh(flip(x[0], {0, 1}), 26);
  });
  check_layouts("repeat", {{{2, 3}}}, [](const T& x) {
    return weigh(repeat(x[0], {2, 1, 2}), 27);
  });
}

TEST(AutodiffViews, TrilTriu) {
  check_layouts("tril", {{{4, 4}}},
                [](const T& x) { return weigh(tril(x[0], -1), 28); });
  check_layouts("triu", {{{3, 5}}},
                [](const T& x) { return weigh(triu(x[0], 1), 29); });
}

TEST(AutodiffViews, AssignIntoPart) {
  // y = x * 2, then part of y is overwritten by z (PyTorch's CopySlices):
  // the overwritten part of y passes no gradient to x.
  check("assign into a slice", {{{4, 3}}, {{2, 3}}}, [](const T& x) {
    Tensor y = mul(x[0], 2.0);
    assign(y.slice(0, 1, 3), x[1]);
    return weigh(y, 30);
  });
  check("assign broadcast into a transposed column", {{{3, 4}}, {{3}}},
        [](const T& x) {
          Tensor y = exp(x[0]);
          assign(y.transpose(0, 1).select(0, 1), x[1]);
          return weigh(y, 31);
        });
  check("assign a constant", {{{5}}}, [](const T& x) {
    Tensor y = sin(x[0]);
    assign(y.slice(0, 0, 5, 2), 0.25);
    return weigh(y, 32);
  });
  check("assign into a fresh buffer", {{{2, 2}}}, [](const T& x) {
    Tensor y = zeros({2, 5}, backend(), DType::f64);
    assign(y.narrow(1, 1, 2), x[0]);
    assign(y.narrow(1, 3, 2), square(x[0]));
    return weigh(y, 33);
  });
}

}  // namespace
}  // namespace nascent::autodiff::testing
