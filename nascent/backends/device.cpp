// make_backend: the one place that maps device names to backend classes.
#include "nascent/backends/device.h"

#include <cstdlib>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"
#include "nascent/core/ops.h"
#include "nascent/dist/environment.h"
#include "nascent/dist/mpi.h"
#ifdef NASCENT_HAVE_CUDA
#include "nascent/backends/cuda/backend.h"
#include "nascent/backends/cuda/nccl.h"
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

namespace {

#ifdef NASCENT_HAVE_CUDA
std::unique_ptr<dist::Communicator> make_nccl(Backend& backend) {
  auto* gpu = dynamic_cast<cuda::Backend*>(&backend);
  if (gpu == nullptr) {
    throw ValueError(fmt::format(
        "make_communicator: nccl runs on a CUDA backend, not on {}; train "
        "with --device cuda",
        backend.name()));
  }
  const dist::Placement at = dist::placement_from_environment();
  std::string id;
  if (const char* v = std::getenv("NASCENT_NCCL_ID")) id = v;
  if (id.empty() && at.world_size > 1) {
    if (!dist::has_mpi() || std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {
      throw ValueError(
          "make_communicator: nccl with several ranks needs the clique id "
          "NASCENT_NCCL_ID: start the run with `nascent train --nproc N` or "
          "under mpirun");
    }
    // Rank 0's id, sent to the others over MPI.
    std::unique_ptr<dist::Communicator> mpi = dist::make_mpi_communicator();
    std::string mine =
        mpi->rank() == 0 ? cuda::nccl_unique_id() : std::string(256, '0');
    Backend& host = default_backend();
    std::vector<uint8_t> bytes(mine.begin(), mine.end());
    bytes = mpi->broadcast(from_vector(bytes, host), 0).to_vector<uint8_t>();
    id.assign(bytes.begin(), bytes.end());
  } else if (id.empty()) {
    id = cuda::nccl_unique_id();
  }
  return cuda::make_nccl_communicator(*gpu, at.rank, at.world_size, id);
}
#endif

}  // namespace

std::string make_nccl_clique_id() {
#ifdef NASCENT_HAVE_CUDA
  return cuda::nccl_unique_id();
#else
  throw BackendError(
      "--distributed nccl needs the CUDA backend, which this build of nascent "
      "does not have (configure with the CUDA toolkit installed)");
#endif
}

std::unique_ptr<dist::Communicator> make_communicator(const std::string& kind,
                                                      Backend& backend) {
  if (kind == "local") return std::make_unique<dist::LocalCommunicator>();
  if (kind == "mpi") return dist::make_mpi_communicator();
  if (kind == "nccl") {
#ifdef NASCENT_HAVE_CUDA
    return make_nccl(backend);
#else
    throw BackendError(
        "make_communicator: nccl needs the CUDA backend, which this build of "
        "nascent does not have (configure with the CUDA toolkit installed)");
#endif
  }
  throw ValueError(fmt::format(
      "make_communicator: unknown kind '{}' (mpi, nccl or local)", kind));
}

}  // namespace nascent
