#include "webgpu_test.h"

#include "nascent/core/error.h"

namespace nascent::webgpu::testing {

namespace {

struct Shared {
  Backend* backend = nullptr;
  std::string reason;
};

Shared& shared() {
  // Never destroyed: the driver may be gone by the time statics are.
  static Shared* s = [] {
    auto* out = new Shared;
    try {
      out->backend = new Backend();
    } catch (const BackendError& e) {
      out->reason = e.what();
    }
    return out;
  }();
  return *s;
}

}  // namespace

Backend* shared_backend() {
  return shared().backend;
}

std::string no_adapter_reason() {
  return "no WebGPU adapter, so the WebGPU backend's tests cannot run here: " +
         shared().reason;
}

}  // namespace nascent::webgpu::testing
