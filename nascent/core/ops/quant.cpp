// Front-ends of the quantized-weight ops: the row length K of w comes from
// its bytes per row and the type's block size, so a u8 tensor of the wrong
// width, or x of a K that no whole number of blocks holds, is caught here
// with the op, the shapes and the type in the message.
#include <string>
#include <vector>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

std::string describe_w(const Tensor& w, QuantType type) {
  return fmt::format("{} ({})", w.to_string(), name(type));
}

void check_weight_dtype(const char* op, const Tensor& w, QuantType type) {
  if (w.dtype() != DType::u8) {
    throw DTypeError(
        fmt::format("{}: weights of type {} are raw bytes (u8), got {}", op,
                    name(type), w.to_string()));
  }
}

// Values per row of w, from its bytes per row.
int64_t row_values(const char* op, const Tensor& w, QuantType type) {
  const int64_t bytes = w.shape(-1);
  if (bytes % block_bytes(type) != 0) {
    throw ShapeError(fmt::format(
        "{}: {} rows of {} bytes are not whole {}-byte {} blocks", op,
        describe_w(w, type), bytes, block_bytes(type), name(type)));
  }
  return bytes / block_bytes(type) * block_size(type);
}

// w as 2-D with byte-contiguous rows (a copy only if they are not).
Tensor weight_rows(const Tensor& w) {
  const Tensor w2 = w.ndim() == 2 ? w : w.reshape({-1, w.shape(-1)});
  return w2.strides()[1] == 1 || w2.shape(1) <= 1 ? w2 : w2.contiguous();
}

}  // namespace

Tensor qmatmul(const Tensor& x, const Tensor& w, QuantType type) {
  Backend& backend = detail::common_backend("qmatmul", {&x, &w});
  check_weight_dtype("qmatmul", w, type);
  if (!is_floating(x.dtype())) {
    throw DTypeError(fmt::format(
        "qmatmul: expected a floating x (f32, f64, f16, bf16), got {} and {}",
        x.to_string(), describe_w(w, type)));
  }
  if (x.ndim() == 0 || w.ndim() != 2) {
    throw ShapeError(fmt::format(
        "qmatmul: expected x [..., K] and w [N, bytes per row], got {} and {}",
        x.to_string(), describe_w(w, type)));
  }
  const int64_t k = x.shape(-1), n = w.shape(0);
  if (k % block_size(type) != 0) {
    throw ShapeError(fmt::format(
        "qmatmul: shapes {} and {} do not fit: K = {} is not a multiple of "
        "the {} block size {}",
        x.to_string(), describe_w(w, type), k, name(type), block_size(type)));
  }
  const int64_t bytes = int64_t(row_bytes(type, k));
  if (w.shape(1) != bytes) {
    throw ShapeError(fmt::format(
        "qmatmul: shapes {} and {} do not fit: a {} row of K = {} values is "
        "{} bytes, w has {}",
        x.to_string(), describe_w(w, type), name(type), k, bytes, w.shape(1)));
  }
  Shape shape_out(x.shape().begin(), x.shape().end() - 1);
  shape_out.push_back(n);
  if (k == 0) return zeros(shape_out, backend, x.dtype());

  const int64_t m = x.numel() / k;
  const Tensor x2 = x.cast(DType::f32).contiguous().reshape({m, k});
  Tensor out = detail::new_output({m, n}, DType::f32, backend);
  if (out.numel() > 0) {
    backend.quant(QuantOp::qmatmul, type, weight_rows(w), &x2, out);
  }
  return out.reshape(shape_out).cast(x.dtype());
}

Tensor dequantize(const Tensor& w, QuantType type) {
  Backend& backend = detail::common_backend("dequantize", {&w});
  check_weight_dtype("dequantize", w, type);
  if (w.ndim() == 0) {
    throw ShapeError(
        fmt::format("dequantize: expected w [..., bytes per row], got {}",
                    describe_w(w, type)));
  }
  const int64_t k = row_values("dequantize", w, type);
  Shape shape_out = w.shape();
  shape_out.back() = k;
  Tensor out = detail::new_output(shape_out, DType::f32, backend);
  if (out.numel() == 0) return out;
  Tensor out2 = out.view({-1, k});
  backend.quant(QuantOp::dequantize, type, weight_rows(w), nullptr, out2);
  return out;
}

Tensor quantize(const Tensor& x, QuantType type) {
  Backend& backend = detail::common_backend("quantize", {&x});
  if (!is_floating(x.dtype()) || x.ndim() == 0) {
    throw DTypeError(fmt::format(
        "quantize: expected a floating x [..., K], got {}", x.to_string()));
  }
  const int64_t k = x.shape(-1);
  if (k % block_size(type) != 0) {
    throw ShapeError(fmt::format(
        "quantize: rows of {} hold {} values, not a multiple of the {} block "
        "size {}",
        x.to_string(), k, name(type), block_size(type)));
  }
  const int64_t bytes = int64_t(row_bytes(type, k));
  const int64_t rows = k == 0 ? 0 : x.numel() / k;
  const std::vector<float> values = x.to_vector<float>();
  std::vector<uint8_t> blocks(size_t(rows * bytes));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, values.data() + r * k, blocks.data() + r * bytes, k);
  }
  Shape shape_out = x.shape();
  shape_out.back() = bytes;
  return from_data(blocks.data(), shape_out, DType::u8, backend);
}

}  // namespace nascent
