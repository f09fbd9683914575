// The CPU backend: host memory, multithreaded kernels with SIMD chosen at run
// time (Google Highway). One file per op family: unary.cpp, binary.cpp,
// reduce.cpp, matmul.cpp, conv.cpp, pool.cpp, softmax.cpp, norm.cpp,
// index.cpp, copy.cpp, creation.cpp, random.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/tensor.h"

namespace nascent::cpu {

class Backend;

// Host memory, 64-byte aligned so SIMD loads of whole cache lines line up.
// Blocks of 256 KiB and more come from, and go back to, the backend's cache
// (see Backend).
class CpuData final : public BackendData {
 public:
  CpuData(size_t nbytes, Backend* owner);
  ~CpuData() override;
  std::byte* bytes() const { return ptr_; }
  bool persistent = false;

 private:
  std::byte* ptr_;
  size_t block_;  // Bytes actually allocated (a size class for large ones).
  Backend* owner_;
};

class Backend final : public nascent::Backend {
 public:
  Backend();
  ~Backend() override;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  std::string name() const override { return "cpu"; }

  std::shared_ptr<BackendData> allocate(size_t nbytes) override;
  std::shared_ptr<BackendData> upload(const void* host, size_t nbytes) override;
  HostBytes materialize(const Tensor& t) override;
  void set_persistent(const Tensor& t, bool persistent) override;
  bool is_persistent(const Tensor& t) const override;
  // Gives every cached block back to the system.
  void trim() override;
  MemoryStats memory_stats() const override;
  // Most bytes of freed blocks the cache keeps (default 1 GiB, or
  // NASCENT_CPU_CACHE_MB); blocks beyond it are freed at once.
  void set_cache_limit(size_t bytes);

  void create(CreationOp op, Scalar a, Scalar b, Tensor& out) override;
  void random(RandomOp op, const RandomParams& p, Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
             Tensor& out) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b,
              Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b,
             Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
              const ReduceParams& p, Tensor& out) override;
  void scan(ScanOp op, const Tensor& x, int axis, Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override;
  void conv2d(ConvOp op, const Tensor& a, const Tensor& b, const Tensor* bias,
              const Conv2dParams& p, Tensor& out) override;
  void pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
              const Pool2dParams& p, Tensor& out, Tensor* out_indices) override;
  void softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) override;
  void norm(NormOp op, const Tensor& x, const Tensor* weight,
            const Tensor* bias, double eps, Tensor& out, Tensor* mean,
            Tensor* rstd) override;
  void index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
             const Tensor* src, Tensor& out) override;

 private:
  friend class CpuData;
  void account(int64_t delta);
  // A cached block of exactly `block` bytes, or null.
  std::byte* take_cached(size_t block);
  // Keeps the block for reuse, or frees it if the cache is full.
  void give_back(std::byte* ptr, size_t block);

  std::atomic<int64_t> allocated_{0};
  std::atomic<int64_t> persistent_{0};
  std::atomic<int64_t> peak_{0};

  // Large freed blocks by size class. A training step frees and allocates
  // the same sizes every step; without the cache each large allocation is a
  // fresh mmap whose pages fault in on first touch (measured: 15 of 80 ms of
  // a Fashion-MNIST CNN step).
  mutable std::mutex cache_mutex_;
  std::map<size_t, std::vector<std::byte*>> cache_;
  size_t cached_bytes_ = 0;
  size_t cache_limit_;
};

// Element pointer of a CPU tensor (storage base + offset).
template <class T>
T* data_ptr(const Tensor& t) {
  auto* d = static_cast<CpuData*>(t.data().get());
  return reinterpret_cast<T*>(d->bytes()) + t.offset();
}
inline std::byte* byte_ptr(const Tensor& t) {
  auto* d = static_cast<CpuData*>(t.data().get());
  return d->bytes() + t.offset() * int64_t(t.itemsize());
}

}  // namespace nascent::cpu
