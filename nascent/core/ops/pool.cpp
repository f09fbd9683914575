// max_pool2d and avg_pool2d, NCHW, and their backwards.
//
// Output size as PyTorch (floor mode): (in + 2 * padding - kernel) / stride
// + 1, with padding at most half the kernel so that every window holds an
// input element. Max pooling skips padding (it acts as -inf) and gives NaN if
// a window holds one; its indices are flat positions in each plane's H * W.
// Backends see f32 or f64 only: f16 and bf16 are computed in f32 and cast
// back (exact for max, one rounding for avg).
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

std::string describe_params(const Pool2dParams& p) {
  return fmt::format("kernel [{}, {}], stride [{}, {}], padding [{}, {}]",
                     p.kernel[0], p.kernel[1], p.stride[0], p.stride[1],
                     p.padding[0], p.padding[1]);
}

// Checks an input shape against `p` and returns the output shape.
Shape output_shape(const char* op, const Shape& x, const Pool2dParams& p,
                   const std::string& what) {
  for (int i = 0; i < 2; ++i) {
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.padding[i] < 0) {
      throw ValueError(fmt::format(
          "{}: kernel and stride must be positive and padding non-negative, "
          "got {}",
          op, describe_params(p)));
    }
    if (2 * p.padding[i] > p.kernel[i]) {
      throw ValueError(
          fmt::format("{}: padding must be at most half the kernel, got {}", op,
                      describe_params(p)));
    }
  }
  if (x.size() != 4 || x[1] < 1 || x[2] < 1 || x[3] < 1) {
    throw ShapeError(fmt::format(
        "{}: expected a 4-D input [N, C, H, W] with non-zero C, H and W, got "
        "{}",
        op, what));
  }
  Shape out = {x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t padded = x[size_t(2 + i)] + 2 * p.padding[i];
    if (p.kernel[i] > padded) {
      throw ShapeError(fmt::format(
          "{}: kernel {}x{} is larger than the padded input {}x{} ({}; {})", op,
          p.kernel[0], p.kernel[1], x[2] + 2 * p.padding[0],
          x[3] + 2 * p.padding[1], what, describe_params(p)));
    }
    out[size_t(2 + i)] = (padded - p.kernel[i]) / p.stride[i] + 1;
  }
  return out;
}

void check_floating(const char* op, const Tensor& t) {
  detail::check_dtype(is_floating(t.dtype()), op, t, "a floating dtype");
}

bool is_half(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16;
}

// Checks grad_out against the forward's output shape for `input_shape`.
void check_grad_out(const char* op, const Tensor& grad_out,
                    const Shape& input_shape, const Pool2dParams& p) {
  std::string what = "grad_out " + grad_out.to_string() + ", input shape " +
                     to_string(input_shape);
  checked_numel(input_shape, op);
  Shape out_shape = output_shape(op, input_shape, p, what);
  if (grad_out.shape() != out_shape) {
    throw ShapeError(
        fmt::format("{}: grad_out must have the pooled shape {}, got {} ({})",
                    op, to_string(out_shape), what, describe_params(p)));
  }
  check_floating(op, grad_out);
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x,
                                                  const Pool2dParams& p) {
  const char* op = "max_pool2d";
  Backend& backend = detail::common_backend(op, {&x});
  Shape out_shape = output_shape(op, x.shape(), p, "input " + x.to_string());
  check_floating(op, x);
  if (is_half(x.dtype())) {
    auto [values, indices] = max_pool2d_with_indices(x.cast(DType::f32), p);
    return {values.cast(x.dtype()), indices};
  }
  Tensor out = detail::new_output(out_shape, x.dtype(), backend);
  Tensor indices = detail::new_output(out_shape, DType::i64, backend);
  if (out.numel() > 0) {
    backend.pool2d(PoolOp::max_pool2d, x, nullptr, p, out, &indices);
  }
  return {out, indices};
}

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p) {
  const char* op = "max_pool2d";
  Backend& backend = detail::common_backend(op, {&x});
  Shape out_shape = output_shape(op, x.shape(), p, "input " + x.to_string());
  check_floating(op, x);
  if (is_half(x.dtype())) {
    return max_pool2d(x.cast(DType::f32), p).cast(x.dtype());
  }
  Tensor out = detail::new_output(out_shape, x.dtype(), backend);
  if (out.numel() > 0) {
    backend.pool2d(PoolOp::max_pool2d, x, nullptr, p, out, nullptr);
  }
  return out;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  const char* op = "avg_pool2d";
  Backend& backend = detail::common_backend(op, {&x});
  Shape out_shape = output_shape(op, x.shape(), p, "input " + x.to_string());
  check_floating(op, x);
  if (is_half(x.dtype())) {
    return avg_pool2d(x.cast(DType::f32), p).cast(x.dtype());
  }
  Tensor out = detail::new_output(out_shape, x.dtype(), backend);
  if (out.numel() > 0) {
    backend.pool2d(PoolOp::avg_pool2d, x, nullptr, p, out, nullptr);
  }
  return out;
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                           const Shape& input_shape, const Pool2dParams& p) {
  const char* op = "max_pool2d_backward";
  Backend& backend = detail::common_backend(op, {&grad_out, &indices});
  check_grad_out(op, grad_out, input_shape, p);
  if (indices.shape() != grad_out.shape() || indices.dtype() != DType::i64) {
    throw ShapeError(
        fmt::format("{}: indices must be i64 of grad_out's shape, got {}", op,
                    detail::describe({&grad_out, &indices})));
  }
  if (is_half(grad_out.dtype())) {
    return max_pool2d_backward(grad_out.cast(DType::f32), indices, input_shape,
                               p)
        .cast(grad_out.dtype());
  }
  // Indices come from the forward; backends range-check them as they
  // scatter (a ValueError, never a write out of bounds) rather than core
  // reading them back from the device here.
  Tensor out = detail::new_output(input_shape, grad_out.dtype(), backend);
  if (out.numel() > 0) {
    backend.pool2d(PoolOp::max_pool2d_backward, grad_out, &indices, p, out,
                   nullptr);
  }
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape,
                           const Pool2dParams& p) {
  const char* op = "avg_pool2d_backward";
  Backend& backend = detail::common_backend(op, {&grad_out});
  check_grad_out(op, grad_out, input_shape, p);
  if (is_half(grad_out.dtype())) {
    return avg_pool2d_backward(grad_out.cast(DType::f32), input_shape, p)
        .cast(grad_out.dtype());
  }
  Tensor out = detail::new_output(input_shape, grad_out.dtype(), backend);
  if (out.numel() > 0) {
    backend.pool2d(PoolOp::avg_pool2d_backward, grad_out, nullptr, p, out,
                   nullptr);
  }
  return out;
}

}  // namespace nascent
