// make_backend: the one place that maps device names to backend classes.
#include "nascent/backends/device.h"

#include <cstdlib>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#ifdef NASCENT_HAVE_CUDA
#include "nascent/backends/cuda/backend.h"
#endif
#ifdef NASCENT_HAVE_WEBGPU
#include "nascent/backends/webgpu/backend.h"
#endif

namespace nascent {

namespace {

bool has_webgpu() {
#ifdef NASCENT_HAVE_WEBGPU
  return true;
#else
  return false;
#endif
}

bool has_cuda() {
#ifdef NASCENT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

// The N of "cuda:N", or -1 when the suffix is not a small number.
int parse_index(const std::string& s) {
  if (s.empty() || s.size() > 3) return -1;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
  }
  return std::atoi(s.c_str());
}

}  // namespace

std::string describe_backend(const Backend& backend) {
  if (const auto* c = dynamic_cast<const cpu::Backend*>(&backend)) {
    return fmt::format("{} CPU threads{}", cpu::num_threads(),
                       c->fused() ? "" : " (composed transformer ops)");
  }
  return backend.name();
}

std::vector<std::string> device_names() {
  std::vector<std::string> names = {"cpu"};
  if (has_cuda()) names.push_back("cuda");
  if (has_webgpu()) names.push_back("webgpu");
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& device) {
  if (device == "cpu") return std::make_unique<cpu::Backend>();
  if (device == "cpu:composed") {
    return std::make_unique<cpu::Backend>(cpu::Options{.fused = false});
  }
  if (device == "webgpu") {
#ifdef NASCENT_HAVE_WEBGPU
    return std::make_unique<webgpu::Backend>();
#else
    throw ValueError(
        "make_backend: device 'webgpu' needs the WebGPU backend, which this "
        "build of nascent does not have (run scripts/setup_webgpu.sh and "
        "configure again)");
#endif
  }
  int index = -1;
  if (device == "cuda") {
    index = 0;
  } else if (device.rfind("cuda:", 0) == 0) {
    index = parse_index(device.substr(5));
  }
  if (index < 0) {
    throw ValueError(fmt::format(
        "make_backend: unknown device '{}' (expected cpu, cpu:composed, "
        "cuda, cuda:N or webgpu)",
        device));
  }
#ifdef NASCENT_HAVE_CUDA
  return std::make_unique<cuda::Backend>(index);
#else
  throw ValueError(fmt::format(
      "make_backend: device '{}' needs the CUDA backend, which this build "
      "of nascent does not have (configure with the CUDA toolkit installed)",
      device));
#endif
}

}  // namespace nascent
