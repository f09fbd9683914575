// softmax and log_softmax: integer inputs are taken as f32; backends get a
// contiguous x and a normalised axis.
#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

Tensor softmax_op(SoftmaxOp op, const Tensor& x, int64_t axis) {
  const char* op_name = name(op);
  Backend& backend = detail::common_backend(op_name, {&x});
  const int a = normalize_axis(axis, x.ndim(), op_name);
  const Tensor in = x.cast(to_floating(x.dtype())).contiguous();
  Tensor out = detail::new_output(in.shape(), in.dtype(), backend);
  backend.softmax(op, in, a, out);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) {
  return softmax_op(SoftmaxOp::softmax, x, axis);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  return softmax_op(SoftmaxOp::log_softmax, x, axis);
}

}  // namespace nascent
