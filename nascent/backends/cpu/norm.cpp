#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::norm(NormOp op, const Tensor&, const Tensor*, const Tensor*, double, Tensor&, Tensor*, Tensor*) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
