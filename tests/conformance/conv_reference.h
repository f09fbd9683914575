// float64 reference loops for conv2d, its gradients and pooling, written
// straight from the definitions (no im2col, no shortcuts) so that they share
// no code or idea with the kernels they check.
#pragma once

#include <string>

#include "conformance/reference.h"

namespace nascent::conformance {

// A reference result with, per element, the sum of the absolute values of
// the terms that made it: float error grows with that sum, so tolerances
// scale with it instead of with the (possibly cancelled) result.
struct RefResult {
  HostTensor value;
  std::vector<double> abs_sum;
};

// Output shape of conv2d in floor mode.
Shape conv2d_output_shape(const Shape& x, const Shape& w,
                          const Conv2dParams& p);

RefResult ref_conv2d(const HostTensor& x, const HostTensor& w,
                     const HostTensor* bias, const Conv2dParams& p);
RefResult ref_conv2d_backward_input(const HostTensor& grad_out,
                                    const HostTensor& w,
                                    const Shape& input_shape,
                                    const Conv2dParams& p);
RefResult ref_conv2d_backward_weight(const HostTensor& x,
                                     const HostTensor& grad_out,
                                     const Shape& weight_shape,
                                     const Conv2dParams& p);

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);

// Max pooling as PyTorch: padding is skipped, NaN wins (the last NaN's
// index), else the first maximum's index in the plane's H * W.
struct RefMaxPool {
  HostTensor value;
  std::vector<int64_t> indices;
};
RefMaxPool ref_max_pool2d(const HostTensor& x, const Pool2dParams& p);
HostTensor ref_avg_pool2d(const HostTensor& x, const Pool2dParams& p);
HostTensor ref_max_pool2d_backward(const HostTensor& grad_out,
                                   const std::vector<int64_t>& indices,
                                   const Shape& input_shape);
HostTensor ref_avg_pool2d_backward(const HostTensor& grad_out,
                                   const Shape& input_shape,
                                   const Pool2dParams& p);

// Expects |got - want| <= rel * abs_sum + rtol(dtype) * |want| +
// atol(dtype) element by element; rel fits the dtype the sums ran in.
void expect_close_sums(const Tensor& got, const RefResult& want,
                       const std::string& label);

}  // namespace nascent::conformance
