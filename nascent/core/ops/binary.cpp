// Element-wise binary ops and where: promotion, broadcasting, then one
// backend call with both operands as views of the output's shape.
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::eq:
    case BinaryOp::ne:
    case BinaryOp::lt:
    case BinaryOp::le:
    case BinaryOp::gt:
    case BinaryOp::ge:
      return true;
    default:
      return false;
  }
}

bool is_logical(BinaryOp op) {
  return op == BinaryOp::logical_and || op == BinaryOp::logical_or ||
         op == BinaryOp::logical_xor;
}

// The dtype the op computes in, given its operands' common dtype.
DType compute_dtype(BinaryOp op, DType common, const Tensor& a,
                    const Tensor& b) {
  if (is_logical(op)) return DType::boolean;
  if (is_comparison(op)) return common;
  // div is true division and pow may need fractions: both work in floats.
  if (op == BinaryOp::div || op == BinaryOp::pow) return to_floating(common);
  if (common == DType::boolean) {
    throw DTypeError(fmt::format("{}: needs a number type, got {}", name(op),
                                 detail::describe({&a, &b})));
  }
  return common;
}

Tensor scalar_like(Scalar value, const Tensor& t, BinaryOp op) {
  DType dt = t.dtype();
  if (!value.is_integral() && !is_floating(dt)) {
    dt = DType::f32;
  } else if (dt == DType::boolean && !is_logical(op)) {
    dt = DType::i64;
  }
  return detail::scalar_tensor(value, dt, t.backend());
}

// `t` broadcast to `shape`; no new view when it has that shape already (the
// common case: a view costs a few allocations, which small ops feel).
Tensor as_operand(const Tensor& t, const Shape& shape) {
  return t.shape() == shape ? t : t.expand(shape);
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* op_name = name(op);
  Backend& backend = detail::common_backend(op_name, {&a, &b});
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name);
  DType dt = compute_dtype(op, promote_types(a.dtype(), b.dtype()), a, b);
  Tensor av = as_operand(a.cast(dt), shape);
  Tensor bv = as_operand(b.cast(dt), shape);
  DType out_dtype = is_comparison(op) || is_logical(op) ? DType::boolean : dt;
  Tensor out = detail::new_output(shape, out_dtype, backend);
  backend.binary(op, av, bv, out);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, Scalar b) {
  return binary(op, a, scalar_like(b, a, op));
}

Tensor binary(BinaryOp op, Scalar a, const Tensor& b) {
  return binary(op, scalar_like(a, b, op), b);
}

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::add, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::sub, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::mul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::div, a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::pow, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::minimum, a, b);
}
Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::eq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ne, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::lt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::le, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::gt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ge, a, b);
}
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::logical_and, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::logical_or, a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::logical_xor, a, b);
}

Tensor add(const Tensor& a, Scalar b) {
  return binary(BinaryOp::add, a, b);
}
Tensor sub(const Tensor& a, Scalar b) {
  return binary(BinaryOp::sub, a, b);
}
Tensor mul(const Tensor& a, Scalar b) {
  return binary(BinaryOp::mul, a, b);
}
Tensor div(const Tensor& a, Scalar b) {
  return binary(BinaryOp::div, a, b);
}
Tensor maximum(const Tensor& a, Scalar b) {
  return binary(BinaryOp::maximum, a, b);
}
Tensor minimum(const Tensor& a, Scalar b) {
  return binary(BinaryOp::minimum, a, b);
}
Tensor eq(const Tensor& a, Scalar b) {
  return binary(BinaryOp::eq, a, b);
}
Tensor ne(const Tensor& a, Scalar b) {
  return binary(BinaryOp::ne, a, b);
}
Tensor lt(const Tensor& a, Scalar b) {
  return binary(BinaryOp::lt, a, b);
}
Tensor le(const Tensor& a, Scalar b) {
  return binary(BinaryOp::le, a, b);
}
Tensor gt(const Tensor& a, Scalar b) {
  return binary(BinaryOp::gt, a, b);
}
Tensor ge(const Tensor& a, Scalar b) {
  return binary(BinaryOp::ge, a, b);
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator+(const Tensor& a, Scalar b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, Scalar b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, Scalar b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, Scalar b) {
  return div(a, b);
}
Tensor operator+(Scalar a, const Tensor& b) {
  return binary(BinaryOp::add, a, b);
}
Tensor operator-(Scalar a, const Tensor& b) {
  return binary(BinaryOp::sub, a, b);
}
Tensor operator*(Scalar a, const Tensor& b) {
  return binary(BinaryOp::mul, a, b);
}
Tensor operator/(Scalar a, const Tensor& b) {
  return binary(BinaryOp::div, a, b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Backend& backend = detail::common_backend("where", {&cond, &a, &b});
  Shape shape;
  try {
    shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"),
                             b.shape(), "where");
  } catch (const ShapeError&) {
    // Name all three operands, not the intermediate broadcast shape.
    throw ShapeError(
        fmt::format("where: cond {}, a {} and b {} do not "
                    "broadcast to one shape",
                    cond.to_string(), a.to_string(), b.to_string()));
  }
  DType dt = promote_types(a.dtype(), b.dtype());
  Tensor c = as_operand(cond.cast(DType::boolean), shape);
  Tensor av = as_operand(a.cast(dt), shape);
  Tensor bv = as_operand(b.cast(dt), shape);
  Tensor out = detail::new_output(shape, dt, backend);
  backend.where(c, av, bv, out);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  detail::common_backend("where", {&cond, &a});
  // The scalar takes a's dtype, except that a fractional scalar with an
  // integer or bool tensor gives f32 (as in binary ops and PyTorch).
  DType dt =
      !b.is_integral() && !is_floating(a.dtype()) ? DType::f32 : a.dtype();
  return where(cond, a, detail::scalar_tensor(b, dt, a.backend()));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  detail::common_backend("masked_fill", {&x, &mask});
  bool fits = true;
  try {
    fits =
        broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape();
  } catch (const ShapeError&) {
    fits = false;
  }
  if (!fits) {
    throw ShapeError(
        fmt::format("masked_fill: mask {} does not broadcast to the input {}",
                    mask.to_string(), x.to_string()));
  }
  // The value takes x's dtype: masked_fill never changes the dtype.
  Tensor v = detail::scalar_tensor(value, x.dtype(), x.backend());
  return where(mask, v, x);
}

}  // namespace nascent
