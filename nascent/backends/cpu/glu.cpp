// swiglu and geglu on the CPU: the activation and the product in one pass
// over blocks that stay in L1, instead of an activation tensor written out
// and read back.
#include <algorithm>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/simd/runs.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

void Backend::glu(GluOp op, const Tensor& gate, const Tensor& up, Tensor& out) {
  const DType dt = gate.dtype();
  const UnaryOp act = op == GluOp::swiglu ? UnaryOp::silu : UnaryOp::gelu_tanh;
  if (!fused_ || !simd::has_unary(act, dt, {}) ||
      !simd::has_binary(BinaryOp::mul, dt)) {
    return nascent::Backend::glu(op, gate, up, out);
  }
  const Tensor g = gate.contiguous(), u = up.contiguous();
  const std::byte* gp = byte_ptr(g);
  const std::byte* upp = byte_ptr(u);
  std::byte* y = byte_ptr(out);
  const int64_t size = int64_t(size_of(dt));
  parallel_for(out.numel(), 4096, [=](int64_t i0, int64_t i1) {
    simd::unary(act, dt, gp + i0 * size, y + i0 * size, i1 - i0, {});
    simd::binary(BinaryOp::mul, dt, y + i0 * size, 1, upp + i0 * size, 1,
                 y + i0 * size, i1 - i0);
  });
}

}  // namespace nascent::cpu
