#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::conv2d(ConvOp op, const Tensor&, const Tensor&, const Tensor*, const Conv2dParams&, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
