// Gradchecks of matmul, convolution, pooling, softmax, norms and indexing.
#include "autodiff/gradcheck.h"

namespace nascent::autodiff::testing {
namespace {

using T = std::vector<Tensor>;

GRADCHECK_CASE(matmul, "2-D, batched, broadcast batch, vectors") {
  auto f = [](const T& x) { return matmul(x[0], x[1]); };
  check_layouts("matmul 2-D", {{{3, 4}}, {{4, 2}}}, f);
  check_layouts("matmul batched", {{{2, 3, 4}}, {{2, 4, 5}}}, f);
  // x @ W with W shared by the batch (the folded gradient path), and the
  // other way round.
  check("matmul [2,3,4] @ [4,5]", {{{2, 3, 4}}, {{4, 5}, Layout::transposed}},
        f);
  check("matmul [3,4] @ [2,4,5]", {{{3, 4}}, {{2, 4, 5}}}, f);
  check("matmul [2,1,3,4] @ [3,4,2]", {{{2, 1, 3, 4}}, {{3, 4, 2}}}, f);
  check("matmul vector @ matrix", {{{4}}, {{4, 3}}}, f);
  check("matmul matrix @ vector", {{{3, 4}}, {{4}}}, f);
  check("matmul vector @ vector", {{{4}}, {{4}}}, f);
}

Conv2dParams conv_params(int64_t stride, int64_t padding, int64_t dilation,
                         int64_t groups) {
  Conv2dParams p;
  p.stride[0] = stride;
  p.stride[1] = stride;
  p.padding[0] = padding;
  p.padding[1] = padding > 0 ? padding - 1 : 0;
  p.dilation[0] = p.dilation[1] = dilation;
  p.groups = groups;
  return p;
}

struct ConvShape {
  const char* label;
  Shape x, w;
  Conv2dParams p;
};

std::vector<ConvShape> conv_shapes() {
  return {
      {"3x3", {2, 2, 5, 5}, {3, 2, 3, 3}, conv_params(1, 0, 1, 1)},
      {"stride 2 padding", {1, 2, 6, 5}, {2, 2, 3, 2}, conv_params(2, 1, 1, 1)},
      {"dilation 2", {1, 1, 6, 6}, {2, 1, 2, 2}, conv_params(1, 1, 2, 1)},
      {"groups 2", {1, 4, 4, 4}, {4, 2, 3, 3}, conv_params(1, 1, 1, 2)},
      // Stride that skips the last rows of the input.
      {"stride 3 leftover",
       {1, 1, 7, 7},
       {1, 1, 2, 2},
       conv_params(3, 0, 1, 1)},
  };
}

Shape conv_out(const ConvShape& c) {
  Shape out = {c.x[0], c.w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t extent = c.p.dilation[i] * (c.w[size_t(2 + i)] - 1) + 1;
    out[size_t(2 + i)] =
        (c.x[size_t(2 + i)] + 2 * c.p.padding[i] - extent) / c.p.stride[i] + 1;
  }
  return out;
}

GRADCHECK_CASE(conv2d, "stride, padding, dilation, groups, bias") {
  for (const ConvShape& c : conv_shapes()) {
    check_layouts(std::string("conv2d ") + c.label, {{c.x}, {c.w}},
                  [&](const T& x) { return conv2d(x[0], x[1], nullptr, c.p); });
    check(std::string("conv2d with bias ") + c.label,
          {{c.x}, {c.w}, {{c.w[0]}}},
          [&](const T& x) { return conv2d(x[0], x[1], &x[2], c.p); });
  }
}

GRADCHECK_CASE(conv2d_backward_input, "as a function of grad_out and w") {
  for (const ConvShape& c : conv_shapes()) {
    check(std::string("conv2d_backward_input ") + c.label,
          {{conv_out(c)}, {c.w, Layout::transposed}}, [&](const T& x) {
            return conv2d_backward_input(x[0], x[1], c.x, c.p);
          });
  }
}

GRADCHECK_CASE(conv2d_backward_weight, "as a function of x and grad_out") {
  for (const ConvShape& c : conv_shapes()) {
    check(std::string("conv2d_backward_weight ") + c.label,
          {{c.x, Layout::sliced}, {conv_out(c)}}, [&](const T& x) {
            return conv2d_backward_weight(x[0], x[1], c.w, c.p);
          });
  }
}

Pool2dParams pool_params(int64_t k, int64_t s, int64_t pad, bool include) {
  Pool2dParams p;
  p.kernel[0] = k;
  p.kernel[1] = k;
  p.stride[0] = s;
  p.stride[1] = s;
  p.padding[0] = pad;
  p.padding[1] = pad;
  p.count_include_pad = include;
  return p;
}

GRADCHECK_CASE(max_pool2d, "windows apart, overlapping, padded") {
  for (const Pool2dParams& p :
       {pool_params(2, 2, 0, true), pool_params(3, 1, 1, true),
        pool_params(3, 2, 1, true)}) {
    check_layouts("max_pool2d", {{{2, 2, 5, 6}}},
                  [&](const T& x) { return max_pool2d(x[0], p); });
  }
}

GRADCHECK_CASE(avg_pool2d, "count_include_pad both ways") {
  for (const Pool2dParams& p :
       {pool_params(2, 2, 0, true), pool_params(3, 1, 1, true),
        pool_params(3, 2, 1, false)}) {
    check_layouts("avg_pool2d", {{{2, 2, 5, 6}}},
                  [&](const T& x) { return avg_pool2d(x[0], p); });
  }
}

GRADCHECK_CASE(max_pool2d_backward, "linear in grad_out") {
  Pool2dParams p = pool_params(3, 1, 1, true);
  Tensor x = random({1, 2, 4, 5}, 3);
  Tensor indices = max_pool2d_with_indices(x, p).second;
  check("max_pool2d_backward", {{indices.shape()}}, [&](const T& g) {
    return max_pool2d_backward(g[0], indices, x.shape(), p);
  });
}

GRADCHECK_CASE(avg_pool2d_backward, "linear in grad_out") {
  Pool2dParams p = pool_params(3, 2, 1, false);
  Shape x_shape = {1, 2, 5, 5};
  check("avg_pool2d_backward", {{{1, 2, 3, 3}}},
        [&](const T& g) { return avg_pool2d_backward(g[0], x_shape, p); });
}

GRADCHECK_CASE(softmax, "each axis") {
  for (int64_t axis : {0, 1, -1}) {
    check_layouts("softmax axis " + std::to_string(axis), {{{3, 4}}},
                  [&](const T& x) { return softmax(x[0], axis); });
  }
  check("softmax 3-D middle axis", {{{2, 3, 4}}},
        [](const T& x) { return softmax(x[0], 1); });
}

GRADCHECK_CASE(log_softmax, "each axis") {
  for (int64_t axis : {0, 1, -1}) {
    check_layouts("log_softmax axis " + std::to_string(axis), {{{3, 4}}},
                  [&](const T& x) { return log_softmax(x[0], axis); });
  }
}

GRADCHECK_CASE(layer_norm, "weight and bias, none, two axes") {
  check_layouts("layer_norm", {{{3, 5}}, {{5}}, {{5}}}, [](const T& x) {
    return layer_norm(x[0], &x[1], &x[2], 1e-5);
  });
  check("layer_norm without affine", {{{4, 6}}},
        [](const T& x) { return layer_norm(x[0], nullptr, nullptr, 1e-5); });
  check("layer_norm over 2 axes", {{{2, 3, 4}}, {{3, 4}}, {{3, 4}}},
        [](const T& x) { return layer_norm(x[0], &x[1], &x[2], 1e-3, 2); });
}

GRADCHECK_CASE(rms_norm, "weight, none, two axes") {
  check_layouts("rms_norm", {{{3, 5}}, {{5}}},
                [](const T& x) { return rms_norm(x[0], &x[1], 1e-6); });
  check("rms_norm without weight", {{{4, 6}}},
        [](const T& x) { return rms_norm(x[0], nullptr, 1e-6); });
  check("rms_norm over 2 axes", {{{2, 3, 4}}, {{3, 4}}},
        [](const T& x) { return rms_norm(x[0], &x[1], 1e-3, 2); });
}

Tensor ids(const std::vector<int64_t>& v, const Shape& shape) {
  return from_vector(v, shape, backend());
}

GRADCHECK_CASE(gather, "repeated indices, each axis") {
  Tensor idx0 = ids({0, 2, 2, 1, 0, 0, 1, 2}, {2, 4});
  check_layouts("gather axis 0", {{{3, 4}}},
                [&](const T& x) { return gather(x[0], 0, idx0); });
  Tensor idx1 = ids({3, 3, 0, 1, 2, 0}, {3, 2});
  check_layouts("gather axis 1", {{{3, 4}}},
                [&](const T& x) { return gather(x[0], 1, idx1); });
}

GRADCHECK_CASE(scatter_add, "repeated indices, index smaller than src") {
  Tensor idx = ids({0, 2, 2, 1, 0, 0}, {2, 3});
  check_layouts("scatter_add", {{{3, 4}}, {{2, 3}}},
                [&](const T& x) { return scatter_add(x[0], 0, idx, x[1]); });
  check("scatter_add src larger than index", {{{3, 4}}, {{3, 5}}},
        [&](const T& x) { return scatter_add(x[0], 0, idx, x[1]); });
}

GRADCHECK_CASE(index_select, "repeats, embedding") {
  Tensor idx = ids({2, 0, 2, 1}, {4});
  check_layouts("index_select axis 0", {{{3, 4}}},
                [&](const T& x) { return index_select(x[0], 0, idx); });
  check_layouts("index_select axis 1", {{{4, 5}}},
                [&](const T& x) { return index_select(x[0], 1, idx); });
  Tensor tokens = ids({1, 4, 1, 0, 3, 3}, {2, 3});
  check("embedding", {{{5, 3}}},
        [&](const T& x) { return embedding(x[0], tokens); });
}

}  // namespace
}  // namespace nascent::autodiff::testing
