// The CUDA backend's device state, storage, readback and releaser.
#include <cstring>

#include <fmt/format.h>

#include "nascent/backends/common/geometry.h"
#include "nascent/backends/cuda/context.h"
#include "nascent/backends/cuda/libraries.h"

namespace nascent::cuda {

namespace {

// cuBLASLt's workspace; 32 MiB lets it pick its fastest split-K kernels for
// large products (PyTorch gives it the same on Hopper).
constexpr size_t kWorkspaceBytes = 32u << 20;

void sync_stream(void* stream) {
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  (void)cudaGetLastError();
}

}  // namespace

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  throw BackendError(fmt::format("cuda: {} failed: {} ({})", what,
                                 cudaGetErrorString(e), cudaGetErrorName(e)));
}

void check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw BackendError(fmt::format("cuda: {} failed: cuBLAS status {} ({})", what,
                                 int(s),
                                 cublaslt().cublasLtGetStatusString(s)));
}

void check_launch(const char* op) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw BackendError(fmt::format("cuda: launching the {} kernel failed: {}",
                                   op, cudaGetErrorString(e)));
  }
}

void unsupported(const char* op, const Tensor& t) {
  throw BackendError(
      fmt::format("cuda: {} does not take {}", op, t.to_string()));
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device_) check(cudaSetDevice(device_), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  if (previous_ != device_ && previous_ >= 0) cudaSetDevice(previous_);
}

// --- Pinned host buffers -----------------------------------------------------

PinnedPool::~PinnedPool() {
  trim();
}

std::shared_ptr<std::byte> PinnedPool::get(
    size_t n, const std::shared_ptr<PinnedPool>& self) {
  // Sizes round up to a power of two (at least 4 KiB) so buffers are reused
  // across similar requests.
  size_t size = 4096;
  while (size < n) size *= 2;
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      p = it->second;
      free_.erase(it);
    }
  }
  if (p == nullptr) {
    void* raw = nullptr;
    cudaError_t e = cudaMallocHost(&raw, size);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      trim();
      e = cudaMallocHost(&raw, size);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw OutOfMemory(fmt::format(
          "cuda: could not allocate {} bytes of pinned host memory for a "
          "readback",
          size));
    }
    p = static_cast<std::byte*>(raw);
  }
  std::weak_ptr<PinnedPool> pool = self;
  return std::shared_ptr<std::byte>(p, [pool, size](std::byte* q) {
    if (auto alive = pool.lock()) {
      alive->put(q, size);
    } else {
      cudaFreeHost(q);
    }
  });
}

void PinnedPool::put(std::byte* p, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(size, p);
}

void PinnedPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, p] : free_) cudaFreeHost(p);
  free_.clear();
}

// --- Context
// -------------------------------------------------------------------

Context::Context(int dev) : device(dev) {
  // cuBLASLt first: a missing library throws before any device state
  // exists to leak.
  const CublasLt& blas = cublaslt();
  DeviceGuard guard(device);
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  check(
      cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device),
      "cudaDeviceGetAttribute");
  allocator = std::make_unique<CachingAllocator>(device, sync_stream, stream);
  pinned = std::make_shared<PinnedPool>();
  check(blas.cublasLtCreate(&lt), "cublasLtCreate");
  workspace_bytes = kWorkspaceBytes;
  check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc (workspace)");
  check(cudaMalloc(reinterpret_cast<void**>(&flag), sizeof(int)),
        "cudaMalloc (flag)");
  check(cudaMemsetAsync(flag, 0, sizeof(int), stream), "cudaMemset");
}

Context::~Context() {
  // The runtime may already be gone at exit; errors are ignored.
  cudaSetDevice(device);
  cudaStreamSynchronize(stream);
  dnn.reset();
  allocator.reset();
  cudaFree(workspace);
  cudaFree(flag);
  if (lt != nullptr) cublaslt().cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  (void)cudaGetLastError();
}

// --- Storage
// -------------------------------------------------------------------

CudaData::CudaData(size_t nbytes, std::shared_ptr<Context> ctx)
    : BackendData(nbytes), ctx_(std::move(ctx)) {
  block_ = ctx_->allocator->allocate(nbytes);
}

CudaData::~CudaData() {
  ctx_->allocator->free(block_);
}

Tensor scratch(Backend& backend, const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, backend);
}

Tensor contiguous(Backend& backend, const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), backend);
  backend.copy(t, out);
  return out;
}

// --- Backend
// -------------------------------------------------------------------

Backend::Backend(int device) {
  const int count = device_count();
  if (device < 0 || device >= count) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    (void)cudaGetLastError();
    throw BackendError(fmt::format(
        "cuda: device {} is not available: the driver reports {} CUDA "
        "device(s) (driver version {})",
        device, count, driver));
  }
  ctx_ = std::make_shared<Context>(device);
}

Backend::~Backend() = default;

int Backend::device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string Backend::name() const {
  return fmt::format("cuda:{}", ctx_->device);
}

int Backend::device() const {
  return ctx_->device;
}

void Backend::set_allow_tf32(bool allow) {
  ctx_->allow_tf32 = allow;
}

bool Backend::allow_tf32() const {
  return ctx_->allow_tf32;
}

void Backend::synchronize() {
  DeviceGuard guard(ctx_->device);
  check(cudaStreamSynchronize(ctx_->stream), "cudaStreamSynchronize");
}

void* Backend::native_stream() const {
  return ctx_->stream;
}

std::shared_ptr<BackendData> Backend::allocate(size_t nbytes) {
  DeviceGuard guard(ctx_->device);
  return std::make_shared<CudaData>(nbytes, ctx_);
}

HostBytes Backend::materialize(const Tensor& t) {
  DeviceGuard guard(ctx_->device);
  auto* d = static_cast<CudaData*>(t.data().get());
  const size_t n = std::min(size_t(common::view_end_bytes(t)), d->nbytes());
  std::shared_ptr<std::byte> host = ctx_->pinned->get(n, ctx_->pinned);
  if (n > 0) {
    check(cudaMemcpyAsync(host.get(), d->bytes(), n, cudaMemcpyDeviceToHost,
                          ctx_->stream),
          "cudaMemcpyAsync (materialize)");
    // Wait for this copy (and what it depends on), not the whole device.
    cudaEvent_t done;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
          "cudaEventCreate");
    cudaError_t e = cudaEventRecord(done, ctx_->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(done);
    cudaEventDestroy(done);
    check(e, "waiting for the device (an earlier kernel may have failed)");
  }
  return HostBytes{std::shared_ptr<const void>(host, host.get()), host.get(),
                   n};
}

void Backend::release(Tensor& t) {
  // The storage goes back to the cache when its last handle dies: this one
  // may be it.
  t = Tensor();
}

void Backend::set_persistent(const Tensor& t, bool persistent) {
  auto* d = static_cast<CudaData*>(t.data().get());
  ctx_->allocator->set_persistent(d->block(), persistent);
}

bool Backend::is_persistent(const Tensor& t) const {
  auto* d = static_cast<CudaData*>(t.data().get());
  return d->block() != nullptr && d->block()->persistent;
}

void Backend::trim() {
  DeviceGuard guard(ctx_->device);
  ctx_->allocator->trim();
  ctx_->pinned->trim();
}

MemoryStats Backend::memory_stats() const {
  return ctx_->allocator->stats();
}

}  // namespace nascent::cuda
