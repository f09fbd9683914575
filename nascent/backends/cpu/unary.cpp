#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::unary(UnaryOp op, const Tensor&, const UnaryParams&, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
