// matmul with NumPy semantics: a 1-D left operand gains a leading axis of 1
// and a 1-D right operand a trailing one (both dropped from the result), and
// the axes before the last two broadcast.
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

Tensor matmul(const Tensor& a, const Tensor& b) {
  Backend& backend = detail::common_backend("matmul", {&a, &b});
  if (!is_floating(a.dtype()) || !is_floating(b.dtype())) {
    throw DTypeError(fmt::format(
        "matmul: expected floating dtypes (f32, f64, f16, bf16), got {}",
        detail::describe({&a, &b})));
  }
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw ShapeError(fmt::format(
        "matmul: operands need at least 1 dimension, got {} (use mul for "
        "scalars)",
        detail::describe({&a, &b})));
  }
  const Tensor a2 = a.ndim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.ndim() == 1 ? b.unsqueeze(-1) : b;
  const int64_t m = a2.shape(-2), k = a2.shape(-1);
  const int64_t kb = b2.shape(-2), n = b2.shape(-1);
  if (k != kb) {
    throw ShapeError(fmt::format("matmul: shapes {} do not fit ({} vs {})",
                                 detail::describe({&a, &b}), k, kb));
  }
  const Shape batch_a(a2.shape().begin(), a2.shape().end() - 2);
  const Shape batch_b(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b, "matmul");
  } catch (const ShapeError&) {
    throw ShapeError(fmt::format(
        "matmul: batch dimensions of {} do not broadcast ({} vs {})",
        detail::describe({&a, &b}), to_string(batch_a), to_string(batch_b)));
  }

  // f16 and bf16 accumulate in f32 inside the backend; a mixed pair meets in
  // the promoted type.
  const DType dtype = promote_types(a.dtype(), b.dtype());
  Shape shape_a = batch, shape_b = batch, shape_out = batch;
  shape_a.insert(shape_a.end(), {m, k});
  shape_b.insert(shape_b.end(), {k, n});
  shape_out.insert(shape_out.end(), {m, n});
  const Tensor av = a2.cast(dtype).expand(shape_a);
  const Tensor bv = b2.cast(dtype).expand(shape_b);
  Tensor out = detail::new_output(shape_out, dtype, backend);
  backend.matmul(av, bv, out);

  if (a.ndim() == 1 && b.ndim() == 1) return out.reshape({});
  if (a.ndim() == 1) return out.squeeze(-2);
  if (b.ndim() == 1) return out.squeeze(-1);
  return out;
}

}  // namespace nascent
