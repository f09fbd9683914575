#include "nascent/backends/cpu/backend.h"
namespace nascent::cpu {
void Backend::reduce(ReduceOp op, const Tensor&, const std::vector<int>&, const ReduceParams&, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
void Backend::scan(ScanOp op, const Tensor&, int, Tensor&) {
  throw BackendError(std::string("cpu: ") + nascent::name(op) + " not written yet");
}
}  // namespace nascent::cpu
