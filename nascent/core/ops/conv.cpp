// conv2d and its two gradient convolutions, NCHW.
//
// Output size per spatial axis, as PyTorch (floor mode):
//   out = (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1.
// Backends see f32 or f64 only: f16 and bf16 inputs are computed in f32 and
// the result cast back, since GEMM in half precision would lose too much in
// its long sums and the cast costs little next to the convolution.
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

std::string describe_params(const Conv2dParams& p) {
  return fmt::format(
      "stride [{}, {}], padding [{}, {}], dilation [{}, {}], groups {}",
      p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0],
      p.dilation[1], p.groups);
}

void check_params(const char* op, const Conv2dParams& p) {
  bool ok = p.groups > 0;
  for (int i = 0; i < 2; ++i) {
    ok = ok && p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0;
  }
  if (!ok) {
    throw ValueError(fmt::format(
        "{}: stride, dilation and groups must be positive and padding "
        "non-negative, got {}",
        op, describe_params(p)));
  }
}

// Checks that an input of shape `x` and a weight of shape `w` make a
// convolution under `p`, and returns the output shape. `what` describes
// the operands for messages.
Shape output_shape(const char* op, const Shape& x, const Shape& w,
                   const Conv2dParams& p, const std::string& what) {
  check_params(op, p);
  if (x.size() != 4 || w.size() != 4) {
    throw ShapeError(fmt::format(
        "{}: expected a 4-D input [N, C, H, W] and a 4-D weight [O, C / "
        "groups, KH, KW], got {}",
        op, what));
  }
  const int64_t c = x[1], o = w[0], g = p.groups;
  if (c < 1 || o < 1 || w[2] < 1 || w[3] < 1) {
    throw ShapeError(fmt::format(
        "{}: needs at least one input channel, one output channel and a "
        "kernel of at least 1x1, got {}",
        op, what));
  }
  if (c % g != 0 || o % g != 0) {
    throw ShapeError(fmt::format(
        "{}: {} input and {} output channels are not divisible by groups "
        "{} ({})",
        op, c, o, g, what));
  }
  if (w[1] != c / g) {
    throw ShapeError(fmt::format(
        "{}: weight must have C / groups = {} / {} = {} input channels on "
        "axis 1, got {} ({})",
        op, c, g, c / g, w[1], what));
  }
  Shape out = {x[0], o, 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t padded = x[2 + i] + 2 * p.padding[i];
    int64_t extent = p.dilation[i] * (w[2 + i] - 1) + 1;
    if (extent > padded) {
      throw ShapeError(fmt::format(
          "{}: kernel {}x{} (dilated extent {}) is larger than the padded "
          "input {}x{} ({}; {})",
          op, w[2], w[3], extent, x[2] + 2 * p.padding[0],
          x[3] + 2 * p.padding[1], what, describe_params(p)));
    }
    out[size_t(2 + i)] = (padded - extent) / p.stride[i] + 1;
  }
  return out;
}

void check_floating(const char* op, const Tensor& t) {
  detail::check_dtype(is_floating(t.dtype()), op, t, "a floating dtype");
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    throw DTypeError(
        fmt::format("{}: dtypes differ: {}", op, detail::describe({&a, &b})));
  }
}

bool is_half(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias,
              const Conv2dParams& p) {
  const char* op = "conv2d";
  Backend& backend = detail::common_backend(op, {&x, &weight, bias});
  std::string what =
      "input " + x.to_string() + ", weight " + weight.to_string();
  if (bias != nullptr) what += ", bias " + bias->to_string();
  Shape out_shape = output_shape(op, x.shape(), weight.shape(), p, what);
  if (bias != nullptr && bias->shape() != Shape{weight.shape(0)}) {
    throw ShapeError(fmt::format("{}: bias must have shape [{}], got {}", op,
                                 weight.shape(0), what));
  }
  check_floating(op, x);
  check_same_dtype(op, x, weight);
  if (bias != nullptr) check_same_dtype(op, x, *bias);
  if (is_half(x.dtype())) {
    Tensor b32 = bias != nullptr ? bias->cast(DType::f32) : Tensor();
    return conv2d(x.cast(DType::f32), weight.cast(DType::f32),
                  bias != nullptr ? &b32 : nullptr, p)
        .cast(x.dtype());
  }
  Tensor out = detail::new_output(out_shape, x.dtype(), backend);
  if (out.numel() > 0) backend.conv2d(ConvOp::conv2d, x, weight, bias, p, out);
  return out;
}

Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight,
                             const Shape& input_shape, const Conv2dParams& p) {
  const char* op = "conv2d_backward_input";
  Backend& backend = detail::common_backend(op, {&grad_out, &weight});
  std::string what = "input shape " + to_string(input_shape) + ", weight " +
                     weight.to_string() + ", grad_out " + grad_out.to_string();
  checked_numel(input_shape, op);
  Shape out_shape = output_shape(op, input_shape, weight.shape(), p, what);
  if (grad_out.shape() != out_shape) {
    throw ShapeError(
        fmt::format("{}: grad_out must have the conv2d output shape {}, got {}",
                    op, to_string(out_shape), what));
  }
  check_floating(op, grad_out);
  check_same_dtype(op, grad_out, weight);
  if (is_half(grad_out.dtype())) {
    return conv2d_backward_input(grad_out.cast(DType::f32),
                                 weight.cast(DType::f32), input_shape, p)
        .cast(grad_out.dtype());
  }
  Tensor out = detail::new_output(input_shape, grad_out.dtype(), backend);
  if (out.numel() > 0) {
    backend.conv2d(ConvOp::conv2d_backward_input, grad_out, weight, nullptr, p,
                   out);
  }
  return out;
}

Tensor conv2d_backward_weight(const Tensor& x, const Tensor& grad_out,
                              const Shape& weight_shape,
                              const Conv2dParams& p) {
  const char* op = "conv2d_backward_weight";
  Backend& backend = detail::common_backend(op, {&x, &grad_out});
  std::string what = "input " + x.to_string() + ", weight shape " +
                     to_string(weight_shape) + ", grad_out " +
                     grad_out.to_string();
  checked_numel(weight_shape, op);
  Shape out_shape = output_shape(op, x.shape(), weight_shape, p, what);
  if (grad_out.shape() != out_shape) {
    throw ShapeError(
        fmt::format("{}: grad_out must have the conv2d output shape {}, got {}",
                    op, to_string(out_shape), what));
  }
  check_floating(op, x);
  check_same_dtype(op, x, grad_out);
  if (is_half(x.dtype())) {
    return conv2d_backward_weight(x.cast(DType::f32), grad_out.cast(DType::f32),
                                  weight_shape, p)
        .cast(x.dtype());
  }
  Tensor out = detail::new_output(weight_shape, x.dtype(), backend);
  // An empty batch contributes nothing: the gradient is zero.
  if (x.shape(0) == 0) {
    backend.create(CreationOp::fill, Scalar(0), Scalar(0), out);
  } else {
    backend.conv2d(ConvOp::conv2d_backward_weight, x, grad_out, nullptr, p,
                   out);
  }
  return out;
}

}  // namespace nascent
