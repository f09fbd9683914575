// swiglu and geglu: the activation (math.cpp's silu_f, gelu_tanh_f) and
// the product in one element-wise pass over any strides, instead of an
// activation tensor written out and read back.
#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

void Backend::glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out) {
  const char* op_name = nascent::name(op);
  check_dtype(*ctx_, op_name, gate);
  const Tensor* in[] = {&gate, &up};
  elementwise(*ctx_, op_name, std::string("glu_") + op_name, math_wgsl(),
              op == GluOp::swiglu ? "silu_f(a) * b" : "gelu_tanh_f(a) * b", in,
              out);
}

}  // namespace nascent::webgpu
