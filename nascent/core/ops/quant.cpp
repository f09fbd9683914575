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
  const QuantWeight one{w, type};
  return qmatmul(x, std::span<const QuantWeight>(&one, 1))[0];
}

Tensor qmatmul(const Tensor& x, const QuantWeight& w) {
  return qmatmul(x, std::span<const QuantWeight>(&w, 1))[0];
}

std::vector<Tensor> qmatmul(const Tensor& x,
                            std::span<const QuantWeight> weights) {
  if (weights.empty()) {
    throw ValueError(fmt::format("qmatmul: no weights given for x {}",
                                 x.defined() ? x.to_string() : "(undefined)"));
  }
  Backend& backend = detail::common_backend("qmatmul", {&x});
  for (const QuantWeight& qw : weights) {
    const Tensor& w = qw.w;
    const QuantType type = qw.type;
    detail::common_backend("qmatmul", {&x, &w});
    check_weight_dtype("qmatmul", w, type);
    if (!is_floating(x.dtype())) {
      throw DTypeError(fmt::format(
          "qmatmul: expected a floating x (f32, f64, f16, bf16), got {} and {}",
          x.to_string(), describe_w(w, type)));
    }
    if (x.ndim() == 0 || w.ndim() != 2) {
      throw ShapeError(fmt::format(
          "qmatmul: expected x [..., K] and w [N, bytes per row], got {} and "
          "{}",
          x.to_string(), describe_w(w, type)));
    }
    const int64_t k = x.shape(-1);
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
          x.to_string(), describe_w(w, type), name(type), k, bytes,
          w.shape(1)));
    }
  }
  const int64_t k = x.shape(-1), m = k == 0 ? 0 : x.numel() / k;
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  std::vector<Tensor> outs, rows;
  std::vector<QuantArg> args;
  outs.reserve(weights.size());
  rows.reserve(weights.size());
  for (const QuantWeight& qw : weights) {
    Shape shape_out = lead;
    shape_out.push_back(qw.w.shape(0));
    if (k == 0) {
      outs.push_back(zeros(shape_out, backend, x.dtype()));
      continue;
    }
    outs.push_back(detail::new_output({m, qw.w.shape(0)}, DType::f32, backend));
    rows.push_back(weight_rows(qw.w));
    if (outs.back().numel() > 0) {
      args.push_back({qw.type, &rows.back(), &outs.back()});
    }
  }
  if (!args.empty()) {
    const Tensor x2 = x.cast(DType::f32).contiguous().reshape({m, k});
    backend.quant(QuantOp::qmatmul, &x2, args);
  }
  if (k == 0) return outs;
  for (Tensor& out : outs) {
    Shape shape_out = lead;
    shape_out.push_back(out.shape(1));
    out = out.reshape(shape_out).cast(x.dtype());
  }
  return outs;
}

Tensor qembedding(const Tensor& w, const Tensor& ids, QuantType type) {
  const char* op = "qembedding";
  Backend& backend = detail::common_backend(op, {&w, &ids});
  check_weight_dtype(op, w, type);
  if (w.ndim() != 2) {
    throw ShapeError(fmt::format(
        "qembedding: expected w [N, bytes per row] and ids, got {} and {}",
        describe_w(w, type), ids.to_string()));
  }
  detail::check_dtype(ids.dtype() == DType::i64 || ids.dtype() == DType::i32,
                      op, ids, "ids of i64 or i32");
  const int64_t k = row_values(op, w, type);
  const Tensor idx = ids.cast(DType::i64).reshape({ids.numel()});
  detail::check_index_range(op, idx, ids, w.shape(0), 0, w);
  Shape shape_out = ids.shape();
  shape_out.push_back(k);
  Tensor out = detail::new_output({idx.numel(), k}, DType::f32, backend);
  if (out.numel() > 0) {
    const Tensor w2 = weight_rows(w);
    const QuantArg arg{type, &w2, &out};
    backend.quant(QuantOp::qembedding, &idx,
                  std::span<const QuantArg>(&arg, 1));
  }
  return out.view(shape_out);
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
  const Tensor w2 = weight_rows(w);
  const QuantArg arg{type, &w2, &out2};
  backend.quant(QuantOp::dequantize, nullptr,
                std::span<const QuantArg>(&arg, 1));
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
  Shape shape_out = x.shape();
  shape_out.back() = bytes;
  Tensor out = detail::new_output({rows, bytes}, DType::u8, backend);
  if (out.numel() > 0) {
    const Tensor x2 = x.cast(DType::f32).contiguous().reshape({rows, k});
    const QuantArg arg{type, nullptr, &out};
    backend.quant(QuantOp::quantize, &x2, std::span<const QuantArg>(&arg, 1));
  }
  return out.view(shape_out);
}

// The quant family is optional for a backend: without it, a clear error;
// qembedding decodes the rows it gathers with the backend's own dequantize.
void Backend::quant(QuantOp op, const Tensor* x,
                    std::span<const QuantArg> args) {
  if (op == QuantOp::qembedding) {
    const QuantArg& a = args[0];
    Tensor rows = Tensor::empty({x->numel(), a.w->shape(1)}, DType::u8, *this);
    index(IndexOp::index_select, *a.w, 0, *x, nullptr, rows);
    const QuantArg decode{a.type, &rows, a.out};
    quant(QuantOp::dequantize, nullptr, std::span<const QuantArg>(&decode, 1));
    return;
  }
  throw BackendError(
      fmt::format("{} is not implemented on {} (weights of type {})",
                  nascent::name(op), name(), nascent::name(args[0].type)));
}

int64_t Backend::qmatmul_block_rows(QuantType) const {
  return 0;
}

}  // namespace nascent
