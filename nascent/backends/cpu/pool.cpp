#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::pool2d(PoolOp op, const Tensor&, const Tensor*, const Pool2dParams&, Tensor&, Tensor*) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
