#include "conformance/conv_reference.h"

#include <cmath>
#include <limits>

namespace nascent::conformance {

namespace {

int64_t flat4(const Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

// Calls fn(x_index, w_index, out_index) for every term of the convolution
// sum: the naive seven nested loops, skipping taps that fall in padding.
template <class Fn>
void for_each_term(const Shape& x, const Shape& w, const Conv2dParams& p,
                   Fn&& fn) {
  const Shape out = conv2d_output_shape(x, w, p);
  const int64_t og = w[0] / p.groups, cg = x[1] / p.groups;
  for (int64_t n = 0; n < x[0]; ++n) {
    for (int64_t oc = 0; oc < w[0]; ++oc) {
      const int64_t group = oc / og;
      for (int64_t oh = 0; oh < out[2]; ++oh) {
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t i = 0; i < w[2]; ++i) {
              const int64_t ih =
                  oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
              if (ih < 0 || ih >= x[2]) continue;
              for (int64_t j = 0; j < w[3]; ++j) {
                const int64_t iw =
                    ow * p.stride[1] - p.padding[1] + j * p.dilation[1];
                if (iw < 0 || iw >= x[3]) continue;
                fn(flat4(x, n, group * cg + ci, ih, iw), flat4(w, oc, ci, i, j),
                   flat4(out, n, oc, oh, ow));
              }
            }
          }
        }
      }
    }
  }
}

RefResult zeros_result(const Shape& shape) {
  size_t n = size_t(numel(shape));
  return RefResult{HostTensor{shape, std::vector<double>(n, 0.0)},
                   std::vector<double>(n, 0.0)};
}

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w,
                          const Conv2dParams& p) {
  Shape out = {x[0], w[0], 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    out[2 + i] =
        (x[2 + i] + 2 * p.padding[i] - p.dilation[i] * (w[2 + i] - 1) - 1) /
            p.stride[i] +
        1;
  }
  return out;
}

RefResult ref_conv2d(const HostTensor& x, const HostTensor& w,
                     const HostTensor* bias, const Conv2dParams& p) {
  Shape out = conv2d_output_shape(x.shape, w.shape, p);
  RefResult r = zeros_result(out);
  if (bias != nullptr) {
    for (int64_t i = 0; i < numel(out); ++i) {
      double b = bias->v[size_t((i / (out[2] * out[3])) % out[1])];
      r.value.v[size_t(i)] = b;
      r.abs_sum[size_t(i)] = std::fabs(b);
    }
  }
  for_each_term(x.shape, w.shape, p, [&](int64_t xi, int64_t wi, int64_t oi) {
    double t = x.v[size_t(xi)] * w.v[size_t(wi)];
    r.value.v[size_t(oi)] += t;
    r.abs_sum[size_t(oi)] += std::fabs(t);
  });
  return r;
}

RefResult ref_conv2d_backward_input(const HostTensor& grad_out,
                                    const HostTensor& w,
                                    const Shape& input_shape,
                                    const Conv2dParams& p) {
  RefResult r = zeros_result(input_shape);
  for_each_term(input_shape, w.shape, p,
                [&](int64_t xi, int64_t wi, int64_t oi) {
                  double t = grad_out.v[size_t(oi)] * w.v[size_t(wi)];
                  r.value.v[size_t(xi)] += t;
                  r.abs_sum[size_t(xi)] += std::fabs(t);
                });
  return r;
}

RefResult ref_conv2d_backward_weight(const HostTensor& x,
                                     const HostTensor& grad_out,
                                     const Shape& weight_shape,
                                     const Conv2dParams& p) {
  RefResult r = zeros_result(weight_shape);
  for_each_term(x.shape, weight_shape, p,
                [&](int64_t xi, int64_t wi, int64_t oi) {
                  double t = grad_out.v[size_t(oi)] * x.v[size_t(xi)];
                  r.value.v[size_t(wi)] += t;
                  r.abs_sum[size_t(wi)] += std::fabs(t);
                });
  return r;
}

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  Shape out = {x[0], x[1], 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    out[2 + i] = (x[2 + i] + 2 * p.padding[i] - p.kernel[i]) / p.stride[i] + 1;
  }
  return out;
}

namespace {

// Calls fn(plane, out_index, window rows [h0, h1), cols [w0, w1), size of
// the window counting padding) for every pooled element.
template <class Fn>
void for_each_window(const Shape& x, const Pool2dParams& p, Fn&& fn) {
  const Shape out = pool2d_output_shape(x, p);
  for (int64_t q = 0; q < x[0] * x[1]; ++q) {
    for (int64_t oh = 0; oh < out[2]; ++oh) {
      for (int64_t ow = 0; ow < out[3]; ++ow) {
        int64_t h0 = oh * p.stride[0] - p.padding[0], h1 = h0 + p.kernel[0];
        int64_t w0 = ow * p.stride[1] - p.padding[1], w1 = w0 + p.kernel[1];
        int64_t padded = (std::min(h1, x[2] + p.padding[0]) - h0) *
                         (std::min(w1, x[3] + p.padding[1]) - w0);
        fn(q, (q * out[2] + oh) * out[3] + ow, std::max<int64_t>(h0, 0),
           std::min(h1, x[2]), std::max<int64_t>(w0, 0), std::min(w1, x[3]),
           padded);
      }
    }
  }
}

}  // namespace

RefMaxPool ref_max_pool2d(const HostTensor& x, const Pool2dParams& p) {
  const Shape out = pool2d_output_shape(x.shape, p);
  RefMaxPool r{HostTensor{out, std::vector<double>(size_t(numel(out)))},
               std::vector<int64_t>(size_t(numel(out)))};
  const int64_t hw = x.shape[2] * x.shape[3];
  for_each_window(x.shape, p,
                  [&](int64_t q, int64_t o, int64_t h0, int64_t h1, int64_t w0,
                      int64_t w1, int64_t) {
                    double best = -std::numeric_limits<double>::infinity();
                    int64_t index = h0 * x.shape[3] + w0;
                    for (int64_t h = h0; h < h1; ++h) {
                      for (int64_t w = w0; w < w1; ++w) {
                        double v = x.v[size_t(q * hw + h * x.shape[3] + w)];
                        if (v > best || std::isnan(v)) {
                          best = v;
                          index = h * x.shape[3] + w;
                        }
                      }
                    }
                    r.value.v[size_t(o)] = best;
                    r.indices[size_t(o)] = index;
                  });
  return r;
}

HostTensor ref_avg_pool2d(const HostTensor& x, const Pool2dParams& p) {
  const Shape out = pool2d_output_shape(x.shape, p);
  HostTensor r{out, std::vector<double>(size_t(numel(out)))};
  const int64_t hw = x.shape[2] * x.shape[3];
  for_each_window(x.shape, p,
                  [&](int64_t q, int64_t o, int64_t h0, int64_t h1, int64_t w0,
                      int64_t w1, int64_t padded) {
                    double sum = 0;
                    for (int64_t h = h0; h < h1; ++h) {
                      for (int64_t w = w0; w < w1; ++w) {
                        sum += x.v[size_t(q * hw + h * x.shape[3] + w)];
                      }
                    }
                    int64_t count =
                        p.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
                    r.v[size_t(o)] = sum / double(count);
                  });
  return r;
}

HostTensor ref_max_pool2d_backward(const HostTensor& grad_out,
                                   const std::vector<int64_t>& indices,
                                   const Shape& input_shape) {
  HostTensor r{input_shape, std::vector<double>(size_t(numel(input_shape)))};
  const int64_t hw = input_shape[2] * input_shape[3];
  const int64_t ohw = grad_out.shape[2] * grad_out.shape[3];
  for (int64_t o = 0; o < grad_out.numel(); ++o) {
    r.v[size_t((o / ohw) * hw + indices[size_t(o)])] += grad_out.v[size_t(o)];
  }
  return r;
}

HostTensor ref_avg_pool2d_backward(const HostTensor& grad_out,
                                   const Shape& input_shape,
                                   const Pool2dParams& p) {
  HostTensor r{input_shape, std::vector<double>(size_t(numel(input_shape)))};
  const int64_t hw = input_shape[2] * input_shape[3];
  for_each_window(input_shape, p,
                  [&](int64_t q, int64_t o, int64_t h0, int64_t h1, int64_t w0,
                      int64_t w1, int64_t padded) {
                    int64_t count =
                        p.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
                    for (int64_t h = h0; h < h1; ++h) {
                      for (int64_t w = w0; w < w1; ++w) {
                        r.v[size_t(q * hw + h * input_shape[3] + w)] +=
                            grad_out.v[size_t(o)] / double(count);
                      }
                    }
                  });
  return r;
}

void expect_close_sums(const Tensor& got, const RefResult& want,
                       const std::string& label) {
  ASSERT_EQ(got.shape(), want.value.shape) << label;
  // Sums run in f32 for f32, f16 and bf16, in f64 for f64.
  const double rel = got.dtype() == DType::f64 ? 1e-13 : 1e-5;
  const double rtol = default_rtol(got.dtype());
  const double atol = default_atol(got.dtype());
  std::vector<double> g = got.to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double w = want.value.v[i];
    double tol = rel * want.abs_sum[i] + rtol * std::fabs(w) + atol;
    if (!(std::fabs(g[i] - w) <= tol) && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i]
                    << ", expected " << w << " (tolerance " << tol << ", "
                    << got.to_string() << ")";
    }
  }
  if (failures > 5) {
    ADD_FAILURE() << label << ": " << failures << " of " << g.size()
                  << " elements differ";
  }
}

}  // namespace nascent::conformance
