// The WebGPU backend every test of this folder shares (a device takes
// ~50 ms to make on lavapipe), or null with the reason when there is no
// adapter: the tests then skip, saying so.
#pragma once

#include <string>

#include "host_fallback.h"

namespace nascent::webgpu::testing {

Backend* shared_backend();
std::string no_adapter_reason();

}  // namespace nascent::webgpu::testing
