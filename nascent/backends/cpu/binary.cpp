#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::binary(BinaryOp op, const Tensor&, const Tensor&, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
void Backend::where(const Tensor&, const Tensor&, const Tensor&, Tensor&) {
  throw BackendError("cpu: where not written yet");
}
}  // namespace nascent::cpu
