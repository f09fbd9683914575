#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::matmul(const Tensor&, const Tensor&, Tensor&) {
  throw BackendError("cpu: matmul not written yet");
}
}  // namespace nascent::cpu
