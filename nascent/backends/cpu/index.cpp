#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::index(IndexOp op, const Tensor&, int, const Tensor&, const Tensor*, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
