// Switching backends: the same computation on every device this build has
// (the CPU, the CPU without its fused kernels, CUDA when built and a GPU is
// present, WebGPU where it has the ops), by name as a program's --device
// option would pick it, and tensors moved between backends with to().
#include <cmath>
#include <cstdio>

#include "nascent/backends/device.h"
#include "nascent/nascent.h"

using namespace nascent;

// Attention over random q, k, v, computed where `backend` runs.
std::vector<float> attention_on(Backend& backend, Backend& host) {
  Tensor q = randn({1, 4, 16, 32}, host, 1).to(backend);  // made on the CPU
  Tensor k = randn({1, 2, 16, 32}, backend, 2);  // made there: a seed gives
  Tensor v = randn({1, 2, 16, 32}, backend, 3);  // the same numbers anywhere
  Tensor o = scaled_dot_product_attention(q, k, v, {.causal = true});
  return softmax(o, -1).to_vector<float>();  // read back to the host
}

int main() {
  // [backends]
  cpu::Backend cpu;
  std::vector<float> reference = attention_on(cpu, cpu);
  std::vector<std::string> devices = device_names();  // "cpu", "cuda", ...
  devices.push_back("cpu:composed");
  int failed = 0;
  for (const std::string& name : devices) {
    std::unique_ptr<Backend> backend;
    try {
      backend = make_backend(name);
    } catch (const BackendError& e) {  // built with CUDA, but no GPU here
      std::printf("%-13s skipped: %s\n", name.c_str(), e.what());
      continue;
    }
    std::vector<float> out;
    try {
      out = attention_on(*backend, cpu);
    } catch (const Error& e) {  // the young WebGPU backend names what it lacks
      if (name != "webgpu") throw;
      std::printf("%-13s skipped: %s\n", name.c_str(), e.what());
      continue;
    }
    // [backends]
    double diff = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      diff = std::fmax(diff, std::fabs(double(out[i]) - reference[i]));
    }
    bool ok = out.size() == reference.size() && diff < 1e-4;
    failed += !ok;
    std::printf("%-13s %-24s max |diff| vs cpu %.2g %s\n", name.c_str(),
                describe_backend(*backend).c_str(), diff, ok ? "ok" : "FAILED");
  }
  std::printf(failed ? "FAILED\n" : "ok\n");
  return failed ? 1 : 0;
}
