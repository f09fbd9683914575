// conv2d and its gradients through cuDNN (conv_dnn.cpp), when the build
// found it (NASCENT_HAVE_CUDNN); conv.cu falls back to im2col + cuBLASLt
// when this declines.
#pragma once

#include <cstdint>

#include "nascent/backends/cuda/context.h"

namespace nascent::cuda {

// A convolution's geometry, NCHW: input [n, c, h, w], weight
// [o, c / groups, kh, kw], output [n, o, oh, ow].
struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw, groups;
};

// Runs op on contiguous f32 operands (a and b as Backend::conv2d takes them,
// no bias) through cuDNN. Returns false, having enqueued nothing, when cuDNN
// is not built in, cannot be loaded, or has no algorithm for the shape.
bool dnn_conv2d(Backend& backend, Context& ctx, ConvOp op, const Tensor& a,
                const Tensor& b, const ConvShape& s, Tensor& out);

}  // namespace nascent::cuda
