// The CUDA backend's internals, shared by its host files and kernels: the
// device state (stream, allocator, cuBLASLt handle and workspace, pinned
// host buffers), device storage, error checks and pointer access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "nascent/backends/cuda/allocator.h"
#include "nascent/backends/cuda/backend.h"
#include "nascent/core/error.h"

namespace nascent::cuda {

// Throws BackendError "cuda: <what>: <error>" unless e is cudaSuccess.
void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);
// The launch that was just enqueued for `op` was accepted.
void check_launch(const char* op);
// BackendError "cuda: <op> does not take <t>". (Kernel files do not use
// fmt: nvcc's C++20 front end rejects its constexpr code.)
[[noreturn]] void unsupported(const char* op, const Tensor& t);

// Page-locked host buffers for readback, kept for reuse (cudaMallocHost
// costs milliseconds).
class PinnedPool {
 public:
  ~PinnedPool();
  // A buffer of at least n bytes; the deleter returns it to the pool.
  std::shared_ptr<std::byte> get(size_t n,
                                 const std::shared_ptr<PinnedPool>& self);
  void trim();

 private:
  void put(std::byte* p, size_t size);
  std::mutex mutex_;
  std::multimap<size_t, std::byte*> free_;
};

struct Context {
  explicit Context(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device = 0;
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  bool allow_tf32 = false;
  std::unique_ptr<CachingAllocator> allocator;
  std::shared_ptr<PinnedPool> pinned;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;  // cuBLASLt's scratch, owned here.
  size_t workspace_bytes = 0;
  int* flag = nullptr;  // A device word kernels set on bad input.
  std::mutex mutex;     // Guards the caches below.
  std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> gemm_algos;
  // cuDNN's handle and convolution plans (conv_dnn.cpp), made on first use.
  std::shared_ptr<void> dnn;
};

// Storage on the device: one block of the caching allocator. It keeps the
// context alive, so tensors may outlive the Backend that made them.
class CudaData final : public BackendData {
 public:
  CudaData(size_t nbytes, std::shared_ptr<Context> ctx);
  ~CudaData() override;
  std::byte* bytes() const { return block_ ? block_->ptr : nullptr; }
  Block* block() const { return block_; }
  Context& context() const { return *ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  Block* block_;
};

// Device pointer of a tensor's first element (storage + offset).
template <class T>
T* data_ptr(const Tensor& t) {
  auto* d = static_cast<CudaData*>(t.data().get());
  return reinterpret_cast<T*>(d->bytes()) + t.offset();
}
inline std::byte* byte_ptr(const Tensor& t) {
  auto* d = static_cast<CudaData*>(t.data().get());
  return d->bytes() + t.offset() * int64_t(t.itemsize());
}

// Makes the backend's device current for the scope (several GPUs).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_;
};

// A contiguous scratch tensor on `backend` (its memory comes back by RAII).
Tensor scratch(Backend& backend, const Shape& shape, DType dtype);

// A contiguous copy of t on `backend` unless t already is contiguous.
Tensor contiguous(Backend& backend, const Tensor& t);

}  // namespace nascent::cuda
